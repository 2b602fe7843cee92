//! The coordinator's modules import one another without a circle, so they read top-down.
//!
//! Every file of `src/` is a module (`lib.rs` the crate root, `a.rs` and `a/mod.rs` module `a`,
//! `a/b.rs` module `a::b`). Its edges are the modules its code (comments and the trailing
//! `#[cfg(test)]` part left out) names: `crate::a::b::Item` is an edge to the longest module
//! prefix (`a::b`; an item of the root itself, a re-export of `lib.rs`, is an edge to the root),
//! `super::x::…` resolves from the parent, and a module naming a child it declares (`child::…`)
//! has an edge to it. A parent's `mod child;` alone is no edge, so a child may be declared by the
//! module it serves. The test fails on any strongly connected set of more than one module,
//! naming its members and the edges between them; run it with `--nocapture` to see the graph.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path → the modules it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn coordinator_modules_form_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    for (from, to) in &graph {
        for to in to {
            eprintln!("{from} -> {to}");
        }
    }
    let circles = circles(&graph);
    let described: Vec<String> = circles
        .iter()
        .map(|members| {
            let edges: Vec<String> = members
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| members.contains(*to))
                        .map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            format!("{members:?}: {}", edges.join(", "))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles between coordinator modules:\n{}",
        described.join("\n")
    );
}

#[test]
fn a_circle_is_found_and_named() {
    // a -> b -> c -> a, and d -> a outside the circle.
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .iter()
        .fold(Graph::new(), |mut g, (from, to)| {
            g.entry(from.to_string())
                .or_default()
                .insert(to.to_string());
            g.entry(to.to_string()).or_default();
            g
        });
    let expected: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    assert_eq!(circles(&graph), vec![expected]);
}

#[test]
fn paths_resolve_to_the_longest_module_and_comments_are_no_edges() {
    let modules: BTreeSet<String> = ["crate", "load", "load::phase", "load::call", "runner"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let code = "//! see [`crate::runner`]\n\
                use super::phase::Shared; // crate::runner too\n\
                use crate::load::call::{Due, call};\n\
                let x = crate::RunInputs::new();\n\
                #[cfg(test)]\n\
                use crate::runner::Thing;\n";
    let edges = edges_of("load::open", code, &modules);
    let expected: BTreeSet<String> = ["load::phase", "load::call", "crate"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(edges, expected);
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file of `src` (`crate` for `lib.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        return "crate".into();
    }
    parts.join("::")
}

fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    files
        .iter()
        .map(|file| {
            let module = module_of(src, file);
            let code = std::fs::read_to_string(file).unwrap();
            let edges = edges_of(&module, &code, &modules);
            (module, edges)
        })
        .collect()
}

/// The code of a file without comments and without its trailing `#[cfg(test)]` part.
fn code_lines(code: &str) -> Vec<&str> {
    code.lines()
        .take_while(|line| !line.trim_start().starts_with("#[cfg(test)]"))
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect()
}

/// The modules that `module`'s `code` names, itself left out.
fn edges_of(module: &str, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let lines = code_lines(code);
    let parent = match module.rsplit_once("::") {
        Some((parent, _)) => parent.to_string(),
        None => "crate".to_string(),
    };
    let children: Vec<String> = lines
        .iter()
        .filter_map(|line| {
            let line = line
                .trim()
                .trim_start_matches("pub ")
                .trim_start_matches("pub(crate) ");
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect();
    let mut edges = BTreeSet::new();
    for line in &lines {
        for (anchor, base) in [("crate::", "crate"), ("super::", parent.as_str())] {
            for path in paths_after(line, anchor) {
                edges.insert(resolve(base, &path, modules));
            }
        }
        for child in &children {
            if !paths_after(line, &format!("{child}::")).is_empty() {
                let own = if module == "crate" {
                    child.clone()
                } else {
                    format!("{module}::{child}")
                };
                edges.insert(own);
            }
        }
    }
    edges.remove(module);
    edges
}

/// The `::`-separated identifiers that follow each `anchor` of `line` standing on its own (not
/// the tail of a longer path or identifier); `{` ends a path (the group's paths are not split).
fn paths_after(line: &str, anchor: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = line[from..].find(anchor) {
        let start = from + at;
        from = start + anchor.len();
        let before = line[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut path = vec![anchor.trim_end_matches("::").to_string()];
        let rest = &line[from..];
        let mut segments = rest.split("::");
        for segment in segments.by_ref() {
            let ident: String = segment
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() {
                break;
            }
            let whole = ident.len() == segment.len();
            path.push(ident);
            if !whole {
                break;
            }
        }
        out.push(path);
    }
    out
}

/// The module a path names: the longest prefix (below `base`) that is a module, else `base`.
fn resolve(base: &str, path: &[String], modules: &BTreeSet<String>) -> String {
    let mut best = base.to_string();
    let mut prefix: Vec<String> = if base == "crate" {
        Vec::new()
    } else {
        base.split("::").map(str::to_string).collect()
    };
    for segment in path.iter().skip(1) {
        prefix.push(segment.clone());
        let candidate = prefix.join("::");
        if modules.contains(&candidate) {
            best = candidate;
        } else {
            break;
        }
    }
    best
}

/// Every strongly connected set of more than one module (Tarjan), each sorted, in order.
fn circles(graph: &Graph) -> Vec<BTreeSet<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        next: usize,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut members = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    members.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if members.len() > 1 {
                    self.found.push(members);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        next: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found.sort();
    walk.found
}
