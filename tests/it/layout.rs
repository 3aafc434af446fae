//! The dependency rules of ARCHITECTURE.md, checked on the real import graph: every source file
//! reachable from `src/lib.rs` is parsed (`syn`), test code left out by parsing (items under
//! `#[cfg(test)]` and the files they declare, wherever they stand in a file), and every path
//! that names the crate (`crate::x`, `super::...` resolved, `use` trees, paths inside macros)
//! becomes an edge between top-level modules. A violation fails naming the file and line.
//!
//! The rules: each top-level module imports only modules listed before it in `lib.rs`
//! (`config` excepted: it builds the stages' settings), so there is no cycle between them (so
//! `episode`, listed before `snippet`, cannot name snippet drafting); a
//! pure stage reaches no configuration, logging set-up, store, shell or door, directly or
//! through another module; the doors (`cli`, `mcp`, `web`) name the store only through the
//! query layer; the store runs no stage; only `run` starts tasks or threads; only
//! `cli` prints (logging to stderr is `telemetry`'s).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// The synchronous stages, and the text leaf they share.
const PURE: [&str; 8] = [
    "text",
    "tail",
    "archive",
    "parse",
    "extract",
    "episode",
    "snippet",
    "conversation",
];

/// What a pure stage may never reach.
const NOT_FOR_STAGES: [&str; 10] = [
    "config",
    "telemetry",
    "store",
    "run",
    "query",
    "export",
    "mcp",
    "web",
    "cli",
    "main",
];

/// The exception to the order (ARCHITECTURE.md, "Dependency rules").
const BUILDER: &str = "config";

/// A use of something: where, and what it names.
#[derive(Debug, Clone)]
struct Use {
    file: PathBuf,
    line: usize,
    /// The module the file belongs to (`["store", "read", "sessions"]`).
    from: Vec<String>,
    /// The path, resolved to start at the crate root (`["store", "Store"]`).
    target: Vec<String>,
}

/// A macro call or a path segment worth a rule (spawns, prints).
#[derive(Debug, Clone)]
struct Mention {
    file: PathBuf,
    line: usize,
    module: Vec<String>,
    text: String,
}

#[derive(Default)]
struct Crate {
    uses: Vec<Use>,
    mentions: Vec<Mention>,
    files: Vec<PathBuf>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().split_whitespace().any(|t| t == "test"))
    })
}

/// Resolve `segments` (as written in module `module`) to a path from the crate root, or
/// `None` for a path that is not the crate's (`std::...`, a local name).
fn resolve(module: &[String], segments: &[String]) -> Option<Vec<String>> {
    let first = segments.first()?;
    match first.as_str() {
        "crate" => Some(segments[1..].to_vec()),
        "super" | "self" => {
            let mut base = module.to_vec();
            let mut rest = segments;
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

struct FileVisitor<'a> {
    krate: &'a mut Crate,
    file: PathBuf,
    module: Vec<String>,
    /// `mod x;` declarations (not under `cfg(test)`) with the module path they create.
    children: Vec<Vec<String>>,
}

impl FileVisitor<'_> {
    fn record(&mut self, segments: Vec<String>, line: usize) {
        if let Some(target) = resolve(&self.module, &segments) {
            if !target.is_empty() {
                self.krate.uses.push(Use {
                    file: self.file.clone(),
                    line,
                    from: self.module.clone(),
                    target,
                });
            }
        }
    }

    fn mention(&mut self, text: String, line: usize) {
        self.krate.mentions.push(Mention {
            file: self.file.clone(),
            line,
            module: self.module.clone(),
            text,
        });
    }

    /// `crate :: a :: b` sequences and spawn/print words inside a macro's tokens.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let toks: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => self.scan_tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let line = id.span().start().line;
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < toks.len() + 1 {
                        let colons = matches!(&toks.get(j), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                            && matches!(&toks.get(j + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                        match (colons, toks.get(j + 2)) {
                            (true, Some(TokenTree::Ident(next))) => {
                                segs.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    self.record(segs, line);
                    i = j;
                    continue;
                }
                TokenTree::Ident(id) => {
                    let s = id.to_string();
                    if matches!(s.as_str(), "spawn_blocking" | "JoinSet") {
                        self.mention(s, id.span().start().line);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for FileVisitor<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Fn(x) => &x.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            syn::Item::Mod(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            _ => &[],
        };
        if is_cfg_test(attrs) {
            return;
        }
        if let syn::Item::Mod(m) = i {
            let mut path = self.module.clone();
            path.push(m.ident.to_string());
            match &m.content {
                None => self.children.push(path),
                Some((_, items)) => {
                    let outer = std::mem::replace(&mut self.module, path);
                    for it in items {
                        self.visit_item(it);
                    }
                    self.module = outer;
                }
            }
            return;
        }
        syn::visit::visit_item(self, i);
    }

    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match i {
            syn::ImplItem::Fn(x) => &x.attrs,
            syn::ImplItem::Const(x) => &x.attrs,
            syn::ImplItem::Type(x) => &x.attrs,
            _ => &[],
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_impl_item(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        fn walk(
            tree: &syn::UseTree,
            prefix: &mut Vec<String>,
            out: &mut Vec<(Vec<String>, usize)>,
        ) {
            match tree {
                syn::UseTree::Path(p) => {
                    prefix.push(p.ident.to_string());
                    walk(&p.tree, prefix, out);
                    prefix.pop();
                }
                syn::UseTree::Name(n) => {
                    let mut v = prefix.clone();
                    if n.ident != "self" {
                        v.push(n.ident.to_string());
                    }
                    out.push((v, n.ident.span().start().line));
                }
                syn::UseTree::Rename(r) => {
                    let mut v = prefix.clone();
                    v.push(r.ident.to_string());
                    out.push((v, r.ident.span().start().line));
                }
                syn::UseTree::Glob(g) => out.push((prefix.clone(), g.star_token.span.start().line)),
                syn::UseTree::Group(g) => {
                    for t in &g.items {
                        walk(t, prefix, out);
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(&u.tree, &mut Vec::new(), &mut found);
        for (segs, line) in found {
            self.record(segs, line);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = p
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        let joined = segs.join("::");
        for needle in [
            "tokio::spawn",
            "spawn_blocking",
            "JoinSet",
            "thread::spawn",
            "task::spawn",
        ] {
            if joined.contains(needle) {
                self.mention(joined.clone(), line);
            }
        }
        self.record(segs, line);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(name) = m.path.segments.last() {
            let n = name.ident.to_string();
            if matches!(
                n.as_str(),
                "println" | "print" | "eprintln" | "eprint" | "dbg"
            ) {
                self.mention(format!("{n}!"), name.ident.span().start().line);
            }
        }
        self.scan_tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    fn visit_expr_method_call(&mut self, c: &'ast syn::ExprMethodCall) {
        let m = c.method.to_string();
        // `.stdout()` with no argument is a handle to print to; `Command::stdout(Stdio)` is not.
        if matches!(m.as_str(), "stdout" | "stderr") && c.args.is_empty() {
            self.mention(format!("{m}()"), c.method.span().start().line);
        }
        syn::visit::visit_expr_method_call(self, c);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            if let Some(last) = p.path.segments.last() {
                let n = last.ident.to_string();
                if n == "stdout" || n == "stderr" {
                    self.mention(format!("{n}()"), last.ident.span().start().line);
                }
            }
        }
        syn::visit::visit_expr_call(self, c);
    }
}

/// The file of module `path` (`src/a/b.rs` or `src/a/b/mod.rs`).
fn file_of(path: &[String]) -> Option<PathBuf> {
    let base = path.iter().fold(PathBuf::from(SRC), |p, s| p.join(s));
    let flat = base.with_extension("rs");
    let nested = base.join("mod.rs");
    [flat, nested].into_iter().find(|p| p.is_file())
}

/// Parse the crate from `lib.rs`, following every non-test `mod` declaration.
fn parse_crate() -> Crate {
    let mut krate = Crate::default();
    let mut queue: VecDeque<(PathBuf, Vec<String>)> =
        VecDeque::from([(Path::new(SRC).join("lib.rs"), Vec::new())]);
    while let Some((file, module)) = queue.pop_front() {
        let text = std::fs::read_to_string(&file).expect("source file");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if is_cfg_test(&ast.attrs) {
            continue;
        }
        let mut v = FileVisitor {
            krate: &mut krate,
            file: file.clone(),
            module: module.clone(),
            children: Vec::new(),
        };
        for item in &ast.items {
            v.visit_item(item);
        }
        let children = std::mem::take(&mut v.children);
        krate.files.push(file.clone());
        for child in children {
            let f = file_of(&child)
                .unwrap_or_else(|| panic!("no file for module {}", child.join("::")));
            queue.push_back((f, child));
        }
    }
    krate
}

/// The top-level modules in `lib.rs` order.
fn lib_order() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("lib.rs");
    let ast = syn::parse_file(&text).expect("lib.rs parses");
    ast.items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m) if !is_cfg_test(&m.attrs) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect()
}

fn rel(p: &Path) -> String {
    p.strip_prefix(concat!(env!("CARGO_MANIFEST_DIR"), "/"))
        .unwrap_or(p)
        .display()
        .to_string()
}

/// Edges between top-level modules, each with one place that makes it.
fn graph(k: &Crate, order: &[String]) -> BTreeMap<(String, String), String> {
    let mut edges = BTreeMap::new();
    for u in &k.uses {
        let (Some(from), Some(to)) = (u.from.first(), u.target.first()) else {
            continue;
        };
        if from == to || !order.contains(to) {
            continue;
        }
        edges
            .entry((from.clone(), to.clone()))
            .or_insert_with(|| format!("{}:{}", rel(&u.file), u.line));
    }
    edges
}

#[test]
fn modules_import_only_modules_listed_before_them() {
    let k = parse_crate();
    let order = lib_order();
    let pos = |m: &str| order.iter().position(|x| x == m);
    let bad: Vec<String> = graph(&k, &order)
        .into_iter()
        .filter(|((from, to), _)| from != BUILDER && pos(to) > pos(from))
        .map(|((from, to), at)| format!("{from} -> {to} ({at})"))
        .collect();
    assert!(
        bad.is_empty(),
        "imports against the lib.rs order:\n{}",
        bad.join("\n")
    );
}

#[test]
fn pure_stages_reach_no_configuration_store_shell_or_door() {
    let k = parse_crate();
    let order = lib_order();
    let edges = graph(&k, &order);
    let mut bad = Vec::new();
    for stage in PURE {
        // Breadth-first over the graph, remembering how each module was reached.
        let mut via: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = VecDeque::from([stage.to_string()]);
        let mut seen = BTreeSet::from([stage.to_string()]);
        while let Some(m) = queue.pop_front() {
            for ((from, to), at) in &edges {
                if from == &m && seen.insert(to.clone()) {
                    via.insert(to.clone(), format!("{from} -> {to} ({at})"));
                    queue.push_back(to.clone());
                }
            }
        }
        for forbidden in NOT_FOR_STAGES {
            if seen.contains(forbidden) {
                // The route, from the forbidden module back to the stage.
                let mut route = Vec::new();
                let mut at = forbidden.to_string();
                while let Some(step) = via.get(&at) {
                    route.push(step.clone());
                    at = step.split(" -> ").next().unwrap_or_default().to_string();
                }
                route.reverse();
                bad.push(format!("{stage} reaches {forbidden}: {}", route.join(", ")));
            }
        }
    }
    assert!(bad.is_empty(), "pure stages reach up:\n{}", bad.join("\n"));
}

#[test]
fn the_store_runs_no_stage() {
    let k = parse_crate();
    let bad: Vec<String> = k
        .uses
        .iter()
        .filter(|u| u.from.first().is_some_and(|m| m == "store"))
        .filter(|u| {
            u.target.first().is_some_and(|t| {
                [
                    "episode", "run", "query", "cli", "config", "mcp", "web", "export",
                ]
                .contains(&t.as_str())
            })
        })
        .map(|u| format!("{}:{}: {}", rel(&u.file), u.line, u.target.join("::")))
        .collect();
    assert!(bad.is_empty(), "the store reaches up:\n{}", bad.join("\n"));
}

#[test]
fn the_doors_reach_the_store_only_through_the_query_layer() {
    let k = parse_crate();
    let bad: Vec<String> = k
        .uses
        .iter()
        .filter(|u| {
            u.from
                .first()
                .is_some_and(|m| ["cli", "mcp", "web"].contains(&m.as_str()))
        })
        .filter(|u| u.target.first().is_some_and(|t| t == "store"))
        .map(|u| format!("{}:{}: {}", rel(&u.file), u.line, u.target.join("::")))
        .collect();
    assert!(
        bad.is_empty(),
        "doors naming crate::store (use crate::query):\n{}",
        bad.join("\n")
    );
}

#[test]
fn only_run_spawns_tasks_and_threads() {
    let k = parse_crate();
    let bad: Vec<String> = k
        .mentions
        .iter()
        .filter(|m| m.text.contains("spawn") || m.text.contains("JoinSet"))
        .filter(|m| m.module.first().is_none_or(|t| t != "run"))
        .map(|m| format!("{}:{}: {}", rel(&m.file), m.line, m.text))
        .collect();
    assert!(
        bad.is_empty(),
        "tasks started outside run:\n{}",
        bad.join("\n")
    );
}

#[test]
fn only_cli_prints() {
    let k = parse_crate();
    let bad: Vec<String> = k
        .mentions
        .iter()
        .filter(|m| m.text.ends_with('!') || m.text.ends_with("()"))
        .filter(|m| {
            // Logging goes to stderr by design (stdout is for results): telemetry sets it up.
            m.module
                .first()
                .is_none_or(|t| t != "cli" && t != "telemetry")
        })
        .map(|m| format!("{}:{}: {}", rel(&m.file), m.line, m.text))
        .collect();
    assert!(bad.is_empty(), "printing outside cli:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_sees_what_it_checks() {
    // The rules pass by finding nothing; make sure finding works, and that test code is left
    // out by parsing (not by stopping at the first `#[cfg(test)]` of a file).
    let k = parse_crate();
    assert!(k.files.len() > 100, "only {} files parsed", k.files.len());
    assert!(
        k.files.iter().all(|f| !f.ends_with("tests.rs")),
        "test files were parsed"
    );
    assert!(
        k.mentions
            .iter()
            .any(|m| m.module.first().is_some_and(|t| t == "run") && m.text.contains("spawn")),
        "no spawn found in run"
    );
    let order = lib_order();
    let edges = graph(&k, &order);
    for (from, to) in [
        ("cli", "query"),
        ("store", "extract"),
        ("snippet", "episode"),
        ("extract", "metrics"),
    ] {
        assert!(
            edges.contains_key(&(from.to_string(), to.to_string())),
            "{from} -> {to} not seen: {edges:?}"
        );
    }
    // A path written after a file's first `#[cfg(test)]` item is still read: `store/sql.rs`
    // has a test-only method in the middle and `row_chunks` after it.
    assert!(
        k.uses
            .iter()
            .any(|u| u.file.ends_with("store/sql.rs") && u.line > 349),
        "store/sql.rs was not read past its first #[cfg(test)]"
    );
    assert!(
        resolve(&["a".into(), "b".into()], &["super".into(), "c".into()])
            == Some(vec!["a".into(), "c".into()])
    );
}
