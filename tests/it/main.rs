//! Integration tests: one binary (ripgrep style). Storage stories run on SQLite and on
//! PostgreSQL (`both_backends!`); PostgreSQL is real, one fresh database per test.
//!
//! - `corpus`: ingest all of `../shared/corpus/real`, check every file's checkpoint, idempotence.
//! - `daemon`: live tailing through the real binary: growth, partial lines, nested dirs,
//!   truncation, rename-over, identical rewrite, deletion, restart, lock, SIGTERM.
//! - `crash`: `kill -9` at random moments while lines are appended; no gap, no duplicate.
//! - `cli`: exit codes and one-line errors, JSON shapes, global flags.
//! - `knowledge`: summaries, feedback, tool calls, tokens against an oracle over the corpus;
//!   resumed copies; sessions finishing by idle time and by the hook, and reopening.
//! - `episodes`: episodes tile every corpus session, snippets pass the gates, re-ingest adds
//!   nothing, the schema refuses bad snippets; live open/close and session end.
//! - `redact`: 60+ fake secrets in real transcript lines never reach any column of either database.
//! - `export`: `gleaner export` in every format over the corpus, filters, atomic output.
//! - `control`: reload by SIGHUP and socket (valid, invalid), the inotify watch limit.
//! - `outage`: PostgreSQL stopped and killed mid-transaction, SQLite's disk full: paused,
//!   reported, caught up with rows identical to a clean run.
//! - `web`: `gleaner web` pages over the corpus (HTTP), escaping, the token, headless Chromium.
//! - `doors`: the query layer at every door: bad inputs refused alike by CLI, MCP and web;
//!   read commands create and migrate nothing; the web view's host and origin checks.
//! - `archive`: every byte read comes back: `restore` over the corpus, after kill -9.
//! - `reextract`: derived rows made again from the archive; nothing else changes.
//! - `identity`: a file's session is the same however its bytes arrive (chunks, kill -9).

mod common;

mod archive;
mod cli;
mod context;
mod control;
mod copies;
mod corpus;
mod crash;
mod damage;
mod deferred;
mod daemon;
mod doctor;
mod doors;
mod episodes;
mod export;
mod export_html;
mod hooks;
mod identity;
mod knowledge;
mod refine;
mod layout;
mod mcp;
mod mcp_paging;
mod output;
mod outage;
mod pack_crash;
mod pack_upgrade;
mod projects;
mod prune;
mod redact;
mod reextract;
mod search;
mod service;
mod snippet_add;
mod snippet_query;
mod team;
mod text;
mod tool_search;
mod trial;
mod usage;
mod usage_ccusage;
mod web;
mod web_narrow;
mod web_usage;
