//! The parts of a page of results after its query: the page and its count asked at once, what
//! tools did read only past every other kind's hits ([`Store::sqlite_page`],
//! [`Store::pg_split_page`]), and the page's excerpts, projects, source files and
//! tool names ([`Store::complete`]).

use super::{excerpt, sql, unmark, Ranked, SearchFilter, SearchHit, SearchKind, COUNT_CAP};
use crate::store::sql::{Backend, Sql};
use crate::store::{Store, StoreError};

impl Store {
    /// SQLite: one page, and its count `(all, reachable)`.
    ///
    /// The count is asked with the page, on a second connection: a narrow filter (a project)
    /// over a common word walks every match of the word twice, once to rank, once to count,
    /// and asked one after the other the two walks added up (on the 5 GB store, 75 ms for
    /// `--project`). With both sides (`indexes` `(true, true)`), tool hits come after every
    /// other kind's ([`super::tools_last`]): what tools did is ranked only for a page that
    /// reaches past the other kinds' ranked matches, so a common word's first pages cost what
    /// they did before tools were searched.
    pub(super) async fn sqlite_page(
        &self,
        f: &SearchFilter,
        limit: i64,
        offset: i64,
        indexes: (bool, bool),
        narrow: bool,
    ) -> Result<(Vec<Ranked>, (i64, i64)), StoreError> {
        let split = indexes == (true, true);
        let first = if split { (true, false) } else { indexes };
        let page = sql::ranked(Backend::Sqlite, f, limit, offset, first, narrow).not_persistent();
        let count = sql::sqlite_count(f, indexes, narrow).not_persistent();
        let (page, count) = tokio::join!(
            self.fetch_all::<Ranked>(&page),
            self.fetch_all::<(i64, i64, i64, i64)>(&count),
        );
        let mut ranked = page?;
        let (all, reach, all_docs, reach_docs) = count?.first().copied().unwrap_or_default();
        let taken = ranked.len() as i64;
        if !split || taken == limit {
            return Ok((ranked, (all, reach)));
        }
        // This page's tool hits start where the other kinds' ranked matches end.
        let page = sql::ranked(
            Backend::Sqlite,
            f,
            limit - taken,
            (offset - reach_docs).max(0),
            (false, true),
            narrow,
        );
        let page = page.not_persistent();
        // Past the cap the count left the tools out: counted now, with their page.
        let tools = (all_docs > COUNT_CAP).then(|| sql::sqlite_count(f, (false, true), narrow));
        let tools = tools.map(|q| q.not_persistent());
        let (page, tools) = tokio::join!(self.fetch_all::<Ranked>(&page), async {
            match &tools {
                Some(q) => self.fetch_all::<(i64, i64, i64, i64)>(q).await.map(Some),
                None => Ok(None),
            }
        });
        ranked.extend(page?);
        let count = match tools?.and_then(|rows| rows.first().copied()) {
            Some((all_tools, reach_tools, ..)) => (all_docs + all_tools, reach_docs + reach_tools),
            None => (all, reach),
        };
        Ok((ranked, count))
    }

    /// PostgreSQL: one page of a search of tools and other kinds. Tool hits come after every
    /// other kind's, so what tools did is read only for a page that reaches past the other
    /// kinds' ranked matches (as [`Store::sqlite_page`]).
    pub(super) async fn pg_split_page(
        &self,
        f: &SearchFilter,
        limit: i64,
        offset: i64,
        narrow: bool,
    ) -> Result<Vec<Ranked>, StoreError> {
        let (docs, tools) = ((true, false), (false, true));
        let q = sql::ranked(Backend::Postgres, f, limit, offset, docs, narrow);
        let mut ranked: Vec<Ranked> = self.fetch_all(&q.not_persistent()).await?;
        let taken = ranked.len() as i64;
        if taken == limit {
            return Ok(ranked);
        }
        // Where the other kinds' ranked matches end: this page's tool hits start there.
        let reach_docs = match taken {
            0 => {
                let q = sql::pg_candidates(f, docs, narrow);
                self.fetch_i64(&q.not_persistent()).await?
            }
            _ => offset + taken,
        };
        let q = sql::ranked(
            Backend::Postgres,
            f,
            limit - taken,
            (offset - reach_docs).max(0),
            tools,
            narrow,
        );
        ranked.extend(self.fetch_all::<Ranked>(&q.not_persistent()).await?);
        Ok(ranked)
    }

    /// Excerpts, projects and source files of a page of results.
    pub(super) async fn complete(
        &self,
        f: &SearchFilter,
        ranked: Vec<Ranked>,
    ) -> Result<Vec<SearchHit>, StoreError> {
        if ranked.is_empty() {
            return Ok(Vec::new());
        }
        let mut q = Sql::new("SELECT session_id, project FROM sessions WHERE ");
        q.push_in("session_id", ranked.iter().map(|r| r.session_id.as_str()));
        let projects = q.not_persistent();
        let mut q = Sql::new("SELECT id, path FROM files WHERE ");
        q.push_in("id", ranked.iter().filter_map(|r| r.file_id));
        let paths = q.not_persistent();
        // The rows the page's hits of `kind` name.
        let refs = |kind: &'static str| {
            ranked
                .iter()
                .filter(move |r| r.kind == kind)
                .filter_map(|r| r.ref_id)
        };
        let mut q = Sql::new("SELECT id, source_file, line_start FROM snippets WHERE ");
        q.push_in("id", refs("snippet"));
        let sources = q.not_persistent();
        let mut q = Sql::new("SELECT id, COALESCE(name, '') FROM tool_uses WHERE ");
        q.push_in("id", refs("tool"));
        let tools = q.not_persistent();
        // Independent lookups, asked at once (each a round trip of its own).
        let (excerpts, projects, paths, sources, tools) = tokio::join!(
            self.excerpts(f, &ranked),
            self.fetch_all::<(String, String)>(&projects),
            self.fetch_all::<(i64, String)>(&paths),
            self.fetch_all::<(i64, String, i64)>(&sources),
            self.fetch_all::<(i64, String)>(&tools),
        );
        let tools: std::collections::HashMap<i64, String> = tools?.into_iter().collect();
        let excerpts = excerpts?;
        let projects: std::collections::HashMap<String, String> = projects?.into_iter().collect();
        let paths: std::collections::HashMap<i64, String> = paths?.into_iter().collect();
        let sources: std::collections::HashMap<i64, (String, i64)> = sources?
            .into_iter()
            .map(|(id, f, l)| (id, (f, l)))
            .collect();
        Ok(ranked
            .into_iter()
            .zip(excerpts)
            .filter_map(|(r, marked)| {
                let kind = SearchKind::from_str(&r.kind)?;
                let (excerpt, highlights) = unmark(&marked);
                let tool = match kind {
                    SearchKind::Tool => r.ref_id.and_then(|id| tools.get(&id)),
                    _ => None,
                };
                let (source_file, line) = match kind {
                    SearchKind::Snippet => match r.ref_id.and_then(|id| sources.get(&id)) {
                        Some((f, l)) => (Some(f.clone()), Some(*l)),
                        None => (None, None),
                    },
                    _ => (r.file_id.and_then(|id| paths.get(&id).cloned()), r.line_no),
                };
                let kinds = match kind {
                    SearchKind::Feedback if r.prompt => {
                        vec![SearchKind::Feedback, SearchKind::Message]
                    }
                    k => vec![k],
                };
                Some(SearchHit {
                    kind,
                    kinds,
                    project: projects.get(&r.session_id).cloned(),
                    session_id: r.session_id,
                    timestamp: r.ts,
                    source_file,
                    line,
                    tool: tool.cloned(),
                    score: r.score,
                    excerpt,
                    highlights,
                })
            })
            .collect())
    }

    /// The marked excerpt of each result, in order (empty where the text is gone).
    async fn excerpts(
        &self,
        f: &SearchFilter,
        ranked: &[Ranked],
    ) -> Result<Vec<String>, StoreError> {
        match self.backend() {
            Backend::Sqlite => {
                let is_tool = |r: &&Ranked| r.kind == SearchKind::Tool.as_str();
                let mut q = sql::sqlite_excerpts(f);
                q.push(" AND ");
                q.push_in(
                    "rowid",
                    ranked.iter().filter(|r| !is_tool(r)).map(|r| r.doc_id),
                );
                // A tool hit's row in `tool_fts` is its tool row's (`ref_id`).
                let mut q2 = sql::sqlite_tool_excerpts(f);
                q2.push(" AND ");
                q2.push_in(
                    "rowid",
                    ranked.iter().filter(is_tool).filter_map(|r| r.ref_id),
                );
                let (any_doc, any_tool) = (
                    ranked.iter().any(|r| !is_tool(&r)),
                    ranked.iter().any(|r| is_tool(&r)),
                );
                let (q, q2) = (q.not_persistent(), q2.not_persistent());
                let (docs, tools) = tokio::join!(
                    async {
                        match any_doc {
                            true => self.fetch_all::<(i64, Option<String>)>(&q).await,
                            false => Ok(Vec::new()),
                        }
                    },
                    async {
                        match any_tool {
                            true => {
                                self.fetch_all::<(i64, Option<String>, Option<String>)>(&q2)
                                    .await
                            }
                            false => Ok(Vec::new()),
                        }
                    },
                );
                let docs: std::collections::HashMap<i64, String> = docs?
                    .into_iter()
                    .map(|(id, e)| (id, e.unwrap_or_default()))
                    .collect();
                let tools: std::collections::HashMap<i64, [Option<String>; 2]> = tools?
                    .into_iter()
                    .map(|(id, call, result)| (id, [call, result]))
                    .collect();
                Ok(ranked
                    .iter()
                    .map(|r| match is_tool(&r) {
                        // The call's excerpt (seq 0) or the result's (1).
                        true => r
                            .ref_id
                            .and_then(|id| tools.get(&id))
                            .and_then(|c| c[usize::from(r.seq == Some(1))].clone())
                            .unwrap_or_default(),
                        false => docs.get(&r.doc_id).cloned().unwrap_or_default(),
                    })
                    .collect())
            }
            Backend::Postgres => {
                // One query per kind on the page, asked at once (each a round trip).
                let terms = excerpt::terms(&f.query);
                let [a, b, c, d, e] = SearchKind::ALL;
                let (a, b, c, d, e) = tokio::join!(
                    self.pg_excerpts(a, ranked, &terms),
                    self.pg_excerpts(b, ranked, &terms),
                    self.pg_excerpts(c, ranked, &terms),
                    self.pg_excerpts(d, ranked, &terms),
                    self.pg_excerpts(e, ranked, &terms),
                );
                let mut out = vec![String::new(); ranked.len()];
                for (i, e) in [a?, b?, c?, d?, e?].into_iter().flatten() {
                    out[i] = e;
                }
                Ok(out)
            }
        }
    }

    /// PostgreSQL: `(position on the page, excerpt)` of the page's results of `kind`, cut here
    /// from the texts their vectors were made of.
    async fn pg_excerpts(
        &self,
        kind: SearchKind,
        ranked: &[Ranked],
        terms: &[(String, bool)],
    ) -> Result<Vec<(usize, String)>, StoreError> {
        let idx: Vec<usize> = (0..ranked.len())
            .filter(|&i| ranked[i].kind == kind.as_str())
            .collect();
        if idx.is_empty() {
            return Ok(Vec::new());
        }
        let picked: Vec<&Ranked> = idx.iter().map(|&i| &ranked[i]).collect();
        let q = sql::pg_texts(kind, &picked);
        let rows: Vec<(i64, Option<String>)> = self.fetch_all(&q.not_persistent()).await?;
        Ok(rows
            .into_iter()
            .filter_map(|(pos, text)| {
                let i = *usize::try_from(pos).ok().and_then(|p| idx.get(p))?;
                Some((i, excerpt::excerpt(text.as_deref().unwrap_or(""), terms)))
            })
            .collect())
    }
}
