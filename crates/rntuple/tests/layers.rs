//! The layering of `docs/architecture.md`, checked on the sources. Every source file of
//! `src/` is read into a graph of modules (an edge for each `crate::...`, `super::...`
//! or `self::...` path, and each path of a `use` that starts at a child module), and:
//! every top-level module is in the table of layers, names only the modules its row
//! allows, and no modules depend on each other in a cycle, at any level (`encoding` and
//! `memory`, or `read::assemble` and `read::column`), in this crate or, but for the
//! cycles known there, in the byte sources' (`rntuple-io`: `cache::layout` and
//! `cache::stats`, or `daos` and `daos_directory`). Test code (`#[cfg(test)]`) may reach
//! anything and is left out.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The sources of the byte sources' crate, `rntuple-io`.
fn io_src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rntuple-io/src")
}

/// A module's path below the crate: `["read", "evolve", "plan"]`; the root is empty.
type Module = Vec<String>;

/// Every `.rs` file below `dir`, as its module, whether it is its directory's module
/// (`mod.rs`, `lib.rs`), and its text.
fn sources(dir: &Path) -> Vec<(Module, bool, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(dir).unwrap().with_extension("");
                let mut module: Module = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let of_directory = matches!(module.last().map(String::as_str), Some("mod" | "lib"));
                if of_directory {
                    module.pop();
                }
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((module, of_directory, text));
            }
        }
    }
    assert!(!out.is_empty(), "no sources under {}", dir.display());
    out
}

/// A child module declared under `#[cfg(test)]`: its name, and its file if a
/// `#[path]` names it (relative to the declaring file's directory).
struct TestChild {
    name: String,
    path: Option<String>,
}

/// The code of a file without comments, string and char literals, and `#[cfg(test)]`
/// items; also the child modules it declares under `#[cfg(test)]` (`mod tests;`).
fn code_of(text: &str) -> (String, Vec<TestChild>) {
    let mut code = String::new();
    let mut test_children = Vec::new();
    let mut skip_depth: Option<i64> = None;
    let mut depth = 0i64;
    let mut test_next = false;
    let mut test_path = None;
    for raw in text.lines() {
        let line = strip_literals(raw);
        let trimmed = line.trim();
        if skip_depth.is_none() && trimmed.starts_with("#[cfg(test)]") {
            test_next = true;
            continue;
        }
        if test_next && trimmed.starts_with("#[path") {
            test_path = raw.split('"').nth(1).map(str::to_string);
        }
        if test_next && !trimmed.starts_with("#[") {
            test_next = false;
            let path = test_path.take();
            if let Some(name) = trimmed
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'))
            {
                let name = name.trim().to_string();
                test_children.push(TestChild { name, path });
                continue;
            }
            // A test item: skipped to its end (one line, or its braces).
            let opens = line.matches('{').count() as i64;
            let closes = line.matches('}').count() as i64;
            if opens > closes {
                skip_depth = Some(depth);
                depth += opens - closes;
            }
            continue;
        }
        depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        code.push_str(&line);
        code.push('\n');
    }
    (code, test_children)
}

/// A line without its comment and the text of its string and char literals.
fn strip_literals(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(s) = chars.next() {
                    match s {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            '\'' => {
                // A char literal ('x', '\n', '{'), or a lifetime ('a): kept as it is.
                let rest: String = chars.clone().take(3).collect();
                let mut r = rest.chars();
                match (r.next(), r.next(), r.next()) {
                    (Some('\\'), _, _) => {
                        for s in chars.by_ref() {
                            if s == '\'' {
                                break;
                            }
                        }
                        out.push_str("' '");
                    }
                    (Some(_), Some('\''), _) => {
                        chars.next();
                        chars.next();
                        out.push_str("' '");
                    }
                    _ => out.push('\''),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The paths `code` names: each `crate::`, `super::` and `self::` path (with the
/// groups of a `use` expanded), and each `use` path that starts with a name (a child
/// module or an outside crate), all as written.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` items, groups expanded.
    let mut rest = code;
    while let Some(at) = find_use(rest) {
        let item = &rest[at..];
        let end = item.find(';').unwrap_or(item.len());
        let tree: String = item[4..end].split_whitespace().collect();
        expand(&tree, &mut Vec::new(), &mut out);
        rest = &item[end..];
    }
    // Paths in the code (a `use` path again: counted once per module anyway).
    for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
        if word.starts_with("crate::") || word.starts_with("super::") || word.starts_with("self::")
        {
            out.push(
                word.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            );
        }
    }
    out
}

/// Where the next `use ` item starts in `code` (at a word boundary).
fn find_use(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = code[from..].find("use ") {
        let at = from + i;
        let before = code[..at].chars().next_back();
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// The paths of a `use` tree (`a::{b::c, d}` gives `a::b::c` and `a::d`).
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let head = &tree[..open];
        let inner = tree[open + 1..]
            .strip_suffix('}')
            .unwrap_or(&tree[open + 1..]);
        let n = prefix.len();
        prefix.extend(
            head.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], prefix, out);
        prefix.truncate(n);
    } else {
        let mut path = prefix.clone();
        let tree = tree.split(" as ").next().unwrap_or(tree);
        path.extend(
            tree.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        if !path.is_empty() {
            out.push(path);
        }
    }
}

/// The core's modules and, for each, the modules it names.
fn module_graph() -> BTreeMap<Module, BTreeSet<Module>> {
    module_graph_of(&src())
}

/// The modules of the crate whose sources are in `src` and, for each, the modules it
/// names (the longest known module each of its paths starts with).
fn module_graph_of(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let files = sources(src);
    let mut codes = BTreeMap::new();
    let mut test_only: BTreeSet<Module> = BTreeSet::new();
    for (module, of_directory, text) in &files {
        let (code, test_children) = code_of(text);
        for child in test_children {
            let mut m = module.clone();
            m.push(child.name);
            test_only.insert(m);
            // A test module in a file of its own (`#[path = "dirfd_tests.rs"]`): that
            // file's module is test code too (a path out of `src` is no module of it).
            if let Some(path) = child.path.filter(|p| !p.contains("..")) {
                let mut m = module.clone();
                if !of_directory {
                    m.pop();
                }
                let file = Path::new(&path).with_extension("");
                m.extend(
                    file.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned()),
                );
                test_only.insert(m);
            }
        }
        codes.insert(module.clone(), code);
    }
    // A module declared under `#[cfg(test)]`, and everything in it, is test code.
    codes.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    let modules: BTreeSet<Module> = codes.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, code) in &codes {
        let mut named = BTreeSet::new();
        for path in paths_in(code) {
            let mut at: Module = match path.first().map(String::as_str) {
                Some("crate") => Vec::new(),
                Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
                Some("self") => module.clone(),
                // A child module's path (`use plan::{...}`), or another crate's.
                _ => module.clone(),
            };
            let mut parts = &path[..];
            if matches!(parts.first().map(String::as_str), Some("crate" | "self")) {
                parts = &parts[1..];
            }
            while parts.first().map(String::as_str) == Some("super") {
                parts = &parts[1..];
                if parts.first().map(String::as_str) == Some("super") {
                    at.pop();
                }
            }
            let mut target = None;
            for part in parts {
                at.push(part.clone());
                if modules.contains(&at) {
                    target = Some(at.clone());
                } else {
                    break;
                }
            }
            if let Some(t) = target {
                named.insert(t);
            }
        }
        graph.insert(module.clone(), named);
    }
    graph
}

/// The edges between siblings: `a -> b` when something in `a` (or below it) names
/// something in its sibling `b` (or below it). A module naming its own parent or child
/// is one unit with it, not a dependency.
fn sibling_edges(graph: &BTreeMap<Module, BTreeSet<Module>>) -> BTreeSet<(Module, Module)> {
    let mut edges = BTreeSet::new();
    for (from, named) in graph {
        for to in named {
            if from.starts_with(to) || to.starts_with(from) {
                continue;
            }
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            edges.insert((from[..=common].to_vec(), to[..=common].to_vec()));
        }
    }
    edges
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// The groups of modules that depend on each other in a cycle (the strongly connected
/// components of `edges` with more than one module), each sorted.
fn cycles(edges: &BTreeSet<(Module, Module)>) -> Vec<Vec<Module>> {
    let mut next: BTreeMap<&Module, Vec<&Module>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    // Two modules are in one cycle when each reaches the other.
    let reach = |from: &Module| -> BTreeSet<&Module> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(m) = stack.pop() {
            for &n in &next[m] {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Module, BTreeSet<&Module>> =
        next.keys().map(|&m| (m, reach(m))).collect();
    let mut out: Vec<Vec<Module>> = Vec::new();
    for (&m, r) in &reached {
        if !r.contains(m) || out.iter().any(|c| c.contains(m)) {
            continue;
        }
        let group: Vec<Module> = r
            .iter()
            .filter(|&&n| reached[n].contains(m))
            .map(|&n| n.clone())
            .collect();
        out.push(group);
    }
    out
}

/// A row of the table of layers in `docs/architecture.md`: a top-level module, the
/// modules its row lets it name (the backticked names of the last column), and whether
/// it may name everything, or every layer listed above it ("everything below", but those
/// after "except").
struct Layer {
    name: String,
    may_name: BTreeSet<String>,
    except: BTreeSet<String>,
    everything: bool,
    everything_below: bool,
}

/// The backticked names of a cell (`read/source/` as `read/source`).
fn ticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|m| m.trim_end_matches('/').to_string())
        .collect()
}

fn layers() -> Vec<Layer> {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md"),
    )
    .unwrap();
    let table = doc
        .split("| module | owns | may name |")
        .nth(1)
        .expect("the table of layers");
    let mut out = Vec::new();
    for row in table.lines().skip(2) {
        if !row.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = row.split(" | ").collect();
        let name = cells[0]
            .trim_start_matches("| ")
            .trim_matches('`')
            .to_string();
        let last = cells.last().unwrap().trim_end_matches(" |");
        // "everything below except `read`": the names after "except" are not allowed.
        let allowed = last.split(" except ").next().unwrap_or(last);
        let except: BTreeSet<String> = ticked(last.split(" except ").nth(1).unwrap_or(""));
        let may_name = ticked(allowed);
        out.push(Layer {
            name,
            may_name,
            except,
            everything: last.starts_with("everything") && !last.starts_with("everything below"),
            everything_below: last.starts_with("everything below"),
        });
    }
    assert!(out.len() > 5, "the table of layers was not found");
    out
}

/// A top-level module's name (a module of one file without `.rs`).
fn top(m: &Module) -> Option<&str> {
    m.first().map(String::as_str)
}

/// The groups of modules of `graph` that depend on each other in a cycle, as text.
fn cycles_of(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    cycles(&sibling_edges(graph))
        .iter()
        .map(|c| c.iter().map(|m| show(m)).collect::<Vec<_>>().join(" <-> "))
        .collect()
}

#[test]
fn no_modules_depend_on_each_other_in_a_cycle() {
    let found = cycles_of(&module_graph());
    assert!(
        found.is_empty(),
        "modules that depend on each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_modules_of_the_byte_sources_depend_on_each_other_in_a_cycle() {
    let found = cycles_of(&module_graph_of(&io_src()));
    assert!(
        found.is_empty(),
        "modules of rntuple-io that depend on each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_graph_sees_the_byte_sources_modules_and_their_names() {
    // The cycle check reads rntuple-io as it reads the core: known edges are found, and
    // test modules (also one in a file of its own) are left out.
    let graph = module_graph_of(&io_src());
    let m = |s: &str| -> Module { s.split("::").map(str::to_string).collect() };
    assert!(graph[&m("daos_directory")].contains(&m("daos")));
    assert!(graph[&m("cache::stats_files")].contains(&m("cache::stats")));
    assert!(graph.contains_key(&m("xrootd::connection")));
    assert!(!graph.contains_key(&m("xrootd::tests")));
    assert!(!graph.contains_key(&m("dirfd_tests")));
}

#[test]
fn the_graph_sees_the_modules_and_their_names() {
    // The checks above look at the right thing: known edges are found.
    let graph = module_graph();
    let m = |s: &str| -> Module { s.split("::").map(str::to_string).collect() };
    assert!(graph.contains_key(&m("memory")), "memory is a module");
    assert!(graph[&m("encoding")].contains(&m("memory")));
    assert!(graph[&m("read::assemble")].contains(&m("read::column")));
    let edges = sibling_edges(&graph);
    assert!(edges.contains(&(m("read"), m("schema"))));
    // A cycle is found when there is one.
    let mut cyclic = edges.clone();
    cyclic.insert((m("schema"), m("read")));
    assert!(cycles(&cyclic).contains(&vec![m("read"), m("schema")]));
}

#[test]
fn each_layer_names_only_what_its_row_allows() {
    let graph = module_graph();
    let layers = layers();
    let mut bad = Vec::new();
    let tops: BTreeSet<&str> = graph.keys().filter_map(top).collect();
    for t in &tops {
        if !layers.iter().any(|l| l.name == *t) {
            bad.push(format!("module `{t}` is not in the table of layers"));
        }
    }
    for (from, named) in &graph {
        let Some(f) = top(from) else { continue };
        // Every layer may name the errors.
        let Some(pos) = layers.iter().position(|l| l.name == f) else {
            continue;
        };
        let layer = &layers[pos];
        for to in named {
            let Some(t) = top(to) else { continue };
            if t == f || t == "error" || layer.everything {
                continue;
            }
            let allowed = layer.may_name.contains(t)
                || (layer.everything_below
                    && !layer.except.contains(t)
                    && layers[..pos].iter().any(|l| l.name == t));
            if !allowed {
                bad.push(format!("{} names {}", show(from), show(to)));
            }
        }
    }
    assert!(bad.is_empty(), "layers crossed:\n{}", bad.join("\n"));
}

#[test]
fn the_decoder_gets_bytes_only_from_page_sources() {
    // Under `read/`, only the page sources (`read/source/`) name `io` and `container`.
    let graph = module_graph();
    let mut hits = Vec::new();
    let mut sources_name_them = false;
    for (from, named) in &graph {
        if top(from) != Some("read") {
            continue;
        }
        for to in named {
            if matches!(top(to), Some("io" | "container")) {
                if from.get(1).map(String::as_str) == Some("source") {
                    sources_name_them = true;
                } else {
                    hits.push(format!("{} names {}", show(from), show(to)));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "I/O outside the page sources:\n{}",
        hits.join("\n")
    );
    assert!(sources_name_them, "the page sources name the byte sources");
}

#[test]
fn the_ttree_reader_stands_beside_the_rntuple_reader() {
    // Neither RNTuple reader nor writer names it: only the tools compose the two.
    let graph = module_graph();
    for (from, named) in &graph {
        if matches!(top(from), Some("read" | "write" | "container")) {
            let hits: Vec<_> = named.iter().filter(|t| top(t) == Some("ttree")).collect();
            assert!(hits.is_empty(), "{} names ttree", show(from));
        }
    }
}

#[test]
fn the_byte_sources_know_nothing_of_the_format() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rntuple-io");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let depends: Vec<&str> = manifest
        .lines()
        .filter(|l| {
            let name = l.split(['=', '.', ' ']).next().unwrap_or_default();
            name == "rntuple" || name == "rntuple-cli"
        })
        .collect();
    assert!(depends.is_empty(), "rntuple-io depends on {depends:?}");
    let mut hits = Vec::new();
    let mut stack = vec![root.join("src")];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or_default();
                    if code.contains("rntuple::") {
                        hits.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        files > 40,
        "only {files} sources found under {}",
        root.display()
    );
    assert!(
        hits.is_empty(),
        "the byte sources name the core:\n{}",
        hits.join("\n")
    );
}
