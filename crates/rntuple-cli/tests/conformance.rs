//! The RNTuple Validation Suite: for each of its 51 cases, `rntuple dump --json` of the
//! file ROOT 6.40 wrote must equal ROOT's own reading of it (shared/conformance), entry
//! by entry. The six compression.* references hold only the sum of `Int64`; their
//! entries come from ROOT 6.40 itself (`tests/rootdump.py --entry-references`, which
//! checks them against those sums), so this test needs PyROOT and fails without it.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// The conformance data: `$RNTUPLE_CONFORMANCE_DIR`, or `shared/` beside the repository.
fn conformance_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("RNTUPLE_CONFORMANCE_DIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/rntuple-validation-1.0")
}

fn cases() -> Vec<String> {
    let dir = conformance_dir().join("read");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("conformance data missing at {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .collect();
    names.sort();
    names
}

struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
}

fn dump(case: &str, extra: &[&str]) -> Outcome {
    let file = conformance_dir().join("write").join(format!("{case}.root"));
    let out = Command::new(env!("CARGO_BIN_EXE_rntuple"))
        .arg("dump")
        .arg(format!("{}:ntpl", file.display()))
        .arg("--json")
        .args(extra)
        .output()
        .expect("run rntuple");
    Outcome {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The first place two JSON values differ, for a readable failure.
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} items vs {} expected", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| first_difference(&format!("{path}[{i}]"), p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(&format!("{path}.{k}"), p, q),
                (p, q) => Some(format!("{path}.{k}: {p:?} vs {q:?} expected")),
            })
        }
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b} expected")),
    }
}

/// `v` with every list sorted (by its items' JSON text), recursively.
fn sort_lists(v: Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(sort_lists).collect();
            items.sort_by_key(|x| x.to_string());
            Value::Array(items)
        }
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, x)| (k, sort_lists(x))).collect()),
        other => other,
    }
}

/// The items of a JSON list, one at a time, as text with the whitespace outside strings
/// removed: split at the list's own commas without being parsed, since parsing the
/// 5 million entries of compression.block.big as values takes minutes in a debug build.
/// Equal texts are equal values; [`compare_entries`] parses the others.
struct ListItems<'a> {
    text: &'a [u8],
    /// Where the next item (or the comma before it) starts.
    pos: usize,
    first: bool,
    done: bool,
}

impl<'a> ListItems<'a> {
    fn new(text: &'a str) -> Result<Self, String> {
        let body = text.trim_start();
        if !body.starts_with('[') {
            let head: String = body.chars().take(80).collect();
            return Err(format!("not a JSON list: {head:?}"));
        }
        Ok(Self {
            text: text.as_bytes(),
            pos: text.len() - body.len() + 1,
            first: true,
            done: false,
        })
    }

    fn skip_whitespace(&mut self) {
        while self.text.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn fail(&mut self, why: String) -> Option<Result<String, String>> {
        self.done = true;
        Some(Err(why))
    }
}

impl Iterator for ListItems<'_> {
    type Item = Result<String, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.skip_whitespace();
        if self.text.get(self.pos) == Some(&b']') {
            self.done = true;
            self.pos += 1;
            self.skip_whitespace();
            if self.pos < self.text.len() {
                return self.fail(format!("text after the list at byte {}", self.pos));
            }
            return None;
        }
        if !self.first {
            if self.text.get(self.pos) != Some(&b',') {
                return self.fail(format!("expected ',' or ']' at byte {}", self.pos));
            }
            self.pos += 1;
        }
        self.first = false;
        let start = self.pos;
        let (mut item, mut depth, mut in_string, mut escaped) = (Vec::new(), 0u32, false, false);
        while let Some(&b) = self.text.get(self.pos) {
            if in_string {
                (escaped, in_string) = (!escaped && b == b'\\', escaped || b != b'"');
            } else {
                match b {
                    b'"' => in_string = true,
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' | b',' if depth == 0 => break,
                    b']' | b'}' => depth -= 1,
                    _ if b.is_ascii_whitespace() => {
                        self.pos += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            item.push(b);
            self.pos += 1;
        }
        if item.is_empty() || in_string || depth > 0 || self.pos == self.text.len() {
            return self.fail(format!("an unterminated or empty item at byte {start}"));
        }
        Some(String::from_utf8(item).map_err(|e| format!("byte {start}: {e}")))
    }
}

/// Compares our dump (a JSON list of entries) with the expected one, entry by entry:
/// the number of entries, or the first difference. Entries of equal text are equal;
/// the others are parsed and compared as values (key order aside). Unordered sets have no order: ROOT's
/// reference lists them in libstdc++'s hash table order after re-inserting (every level
/// reversed), we in the stored order; with `unordered` (every list level of the case is
/// an unordered set) each entry's lists compare as multisets.
fn compare_entries(case: &str, got: &str, expected: &str, unordered: bool) -> Result<u64, String> {
    let ours = |e: String| format!("{case}: our output: {e}");
    let reference = |e: String| format!("{case}: the reference: {e}");
    let mut got = ListItems::new(got).map_err(ours)?;
    let mut expected = ListItems::new(expected).map_err(reference)?;
    let mut n = 0u64;
    loop {
        let (g, e) = match (got.next(), expected.next()) {
            (None, None) => return Ok(n),
            (Some(Err(e)), _) => return Err(ours(e)),
            (_, Some(Err(e))) => return Err(reference(e)),
            (Some(Ok(g)), Some(Ok(e))) if g == e => {
                n += 1;
                continue;
            }
            (Some(Ok(g)), Some(Ok(e))) => (g, e),
            (g, e) => {
                let ours = n + u64::from(g.is_some()) + got.count() as u64;
                let theirs = n + u64::from(e.is_some()) + expected.count() as u64;
                return Err(format!("{case}: {ours} items vs {theirs} expected"));
            }
        };
        let parse = |text: &str| serde_json::from_str::<Value>(text);
        let (g, e) = match (parse(&g), parse(&e)) {
            (Ok(g), Ok(e)) if unordered => (sort_lists(g), sort_lists(e)),
            (Ok(g), Ok(e)) => (g, e),
            (Err(why), _) => return Err(ours(format!("entry {n}: {why}: {g}"))),
            (_, Err(why)) => return Err(reference(format!("entry {n}: {why}: {e}"))),
        };
        if let Some(diff) = first_difference(&format!("{case}[{n}]"), &g, &e) {
            return Err(diff);
        }
        n += 1;
    }
}

/// Has ROOT write, into `dir`, the entries of the cases whose reference holds only sums
/// (the compression.* cases: `{"Int64": sum over all entries}`, as the suite's
/// read_compression.hxx computes): `tests/rootdump.py --entry-references`, which checks
/// that ROOT's entries add up to the reference's sums.
fn write_entry_references(dir: &std::path::Path) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/rootdump.py");
    let out = Command::new("python3")
        .arg(script)
        .arg("--entry-references")
        .arg(dir)
        .env("RNTUPLE_CONFORMANCE_DIR", conformance_dir())
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the compression.* references hold only sums; their entries come from ROOT 6.40 \
         (PyPI `root`), and `tests/rootdump.py --entry-references` failed:\n{}",
        stderr.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
}

/// The entry-by-entry comparison itself: what must be equal is, what differs is found.
#[test]
fn entries_compare_by_value() {
    let pretty = "[\n  {\n    \"a\": 1,\n    \"s\": \"x, ]}\\\" y\"\n  },\n  {\"a\": [2, 3]}\n]\n";
    let compact = r#"[{"a":1,"s":"x, ]}\" y"},
{"a":[2,3]}]"#;
    assert_eq!(compare_entries("c", pretty, compact, false), Ok(2));
    // Key order aside.
    let reordered = r#"[{"s":"x, ]}\" y","a":1},{"a":[2,3]}]"#;
    assert_eq!(compare_entries("c", pretty, reordered, false), Ok(2));
    assert_eq!(compare_entries("c", "[]", " [ ] ", false), Ok(0));
    // Lists as multisets only where asked.
    let swapped = r#"[{"a":1,"s":"x, ]}\" y"},{"a":[3,2]}]"#;
    assert_eq!(compare_entries("c", pretty, swapped, true), Ok(2));
    let differs = |expected: &str, unordered: bool| {
        compare_entries("c", pretty, expected, unordered).expect_err(expected)
    };
    assert!(differs(r#"[{"a":1,"s":"x, ]}\" y"},{"a":[2,4]}]"#, true).contains("c[1]"));
    assert!(differs(swapped, false).contains("c[1]"));
    assert!(differs(r#"[{"a":2,"s":"x, ]}\" y"},{"a":[2,3]}]"#, false).contains("c[0]"));
    assert!(differs(r#"[{"a":1,"s":"x, ]} y"},{"a":[2,3]}]"#, false).contains("c[0]"));
    assert!(differs(r#"[{"a":1,"s":"x, ]}\" y"}]"#, false).contains("2 items vs 1 expected"));
    let three = r#"[{"a":1,"s":"x, ]}\" y"},{"a":[2,3]},{}]"#;
    assert!(differs(three, false).contains("2 items vs 3 expected"));
    assert!(differs(r#"{"Int64": 5}"#, false).contains("not a JSON list"));
    assert!(differs(r#"[{"a":1,"s":"x"}"#, false).contains("unterminated"));
    assert!(differs(r#"[{"a":1,"s":"x, ]}\" y"},{"a":[2,3]}] x"#, false).contains("after"));
}

#[test]
fn all_51_cases_read_like_root() {
    let cases = cases();
    assert_eq!(cases.len(), 51, "the suite has 51 cases");
    let generated = tempfile::tempdir().unwrap();
    write_entry_references(generated.path());
    let mut failures = Vec::new();
    let mut compared = Vec::new();
    for case in &cases {
        // The entries ROOT reads: the reference, or where that holds only sums, ROOT's
        // reading of the same file, entry by entry.
        let from_root = generated.path().join(format!("{case}.json"));
        let reference = if from_root.exists() {
            from_root
        } else {
            conformance_dir().join("read").join(format!("{case}.json"))
        };
        let expected_text = std::fs::read_to_string(&reference).unwrap();
        // ROOT's error cases render as {"error": message}: we must fail with that message.
        if expected_text.trim_start().starts_with('{') {
            let expected: Value = serde_json::from_str(&expected_text).unwrap();
            let Some(message) = expected.get("error").and_then(Value::as_str) else {
                failures.push(format!(
                    "{case}: the reference holds no entries: {expected}"
                ));
                continue;
            };
            let out = dump(case, &[]);
            if out.status != 1 || !out.stderr.contains(message) {
                failures.push(format!(
                    "{case}: expected exit 1 with \"{message}\", got {} / {}",
                    out.status,
                    out.stderr.trim()
                ));
            }
            continue;
        }
        let extra: &[&str] = if case == "structure.attributes" {
            &["--attributes", "Attributes"]
        } else {
            &[]
        };
        let out = dump(case, extra);
        if out.status != 0 {
            failures.push(format!(
                "{case}: exit {} ({})",
                out.status,
                out.stderr.trim()
            ));
            continue;
        }
        let unordered = case.starts_with("types.unordered_set.")
            || case.starts_with("types.unordered_multiset.");
        match compare_entries(case, &out.stdout, &expected_text, unordered) {
            Ok(n) => compared.push(format!("{case}: {n} entries")),
            Err(diff) => failures.push(diff),
        }
    }
    println!("{}", compared.join("\n"));
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from ROOT:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn entry_range_and_field_selection_slice_roots_reading() {
    let case = "types.vector.fundamental";
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(conformance_dir().join("read").join(format!("{case}.json")))
            .unwrap(),
    )
    .unwrap();
    let all = expected.as_array().unwrap();
    let first_key = all[0].as_object().unwrap().keys().next().unwrap().clone();
    let out = dump(case, &["--entries", "1:3", "--fields", &first_key]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let got: Value = serde_json::from_str(&out.stdout).unwrap();
    let want: Vec<Value> = all[1..3]
        .iter()
        .map(|e| {
            let mut m = serde_json::Map::new();
            m.insert(first_key.clone(), e[&first_key].clone());
            Value::Object(m)
        })
        .collect();
    assert_eq!(got, Value::Array(want));
}

#[test]
fn bad_usage_exits_2_and_bad_input_exits_1() {
    let out = dump("types.vector.fundamental", &["--entries", "x:y"]);
    assert_eq!(out.status, 2, "{}", out.stderr);
    // A field the RNTuple does not have is a usage error, as a bad option.
    let out = dump("types.vector.fundamental", &["--fields", "NoSuchField"]);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(out.stderr.contains("NoSuchField"), "{}", out.stderr);
    let missing = Command::new(env!("CARGO_BIN_EXE_rntuple"))
        .args(["dump", "/nonexistent/file.root", "--json"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&missing.stderr).lines().count(), 1);
}

#[test]
fn a_mistyped_environment_variable_is_refused_by_name() {
    let file = conformance_dir()
        .join("write")
        .join("types.vector.fundamental.root");
    for variable in [
        "RNTUPLE_HUGE_PAGES",
        "RNTUPLE_DIRECT_IO",
        "RNTUPLE_BUNCH_BYTES",
        "RNTUPLE_READ_AHEAD_BYTES",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rntuple"))
            .args(["dump", "--json"])
            .arg(format!("{}:ntpl", file.display()))
            .env(variable, "sometimes")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A usage error, as a bad value of the network variables.
        assert_eq!(out.status.code(), Some(2), "{variable}: {stderr}");
        assert!(
            stderr.contains(&format!("{variable}=\"sometimes\"")),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "{variable}: printed before refusing");
    }
}

#[test]
fn dotted_paths_select_record_members() {
    let case = "types.user.class";
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(conformance_dir().join("read").join(format!("{case}.json")))
            .unwrap(),
    )
    .unwrap();
    let out = dump(case, &["--fields", "f.fString,f.:_0.fInt"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let got: Value = serde_json::from_str(&out.stdout).unwrap();
    let want: Vec<Value> = expected
        .as_array()
        .unwrap()
        .iter()
        .map(|e| serde_json::json!({"f.fString": e["f"]["fString"], "f.:_0.fInt": e["f"][":_0"]["fInt"]}))
        .collect();
    assert_eq!(got, Value::Array(want));
    // Members inside a collection are a projection: the collection with only them.
    let out = dump(case, &["--fields", "Vector._0.fString,Vector._0.:_0.fInt"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let got: Value = serde_json::from_str(&out.stdout).unwrap();
    let want: Vec<Value> = expected
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let items: Vec<Value> = e["Vector"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| serde_json::json!({":_0": {"fInt": v[":_0"]["fInt"]}, "fString": v["fString"]}))
                .collect();
            serde_json::json!({ "Vector": items })
        })
        .collect();
    assert_eq!(got, Value::Array(want));
}

#[test]
fn copy_writes_a_file_that_reads_back_identically() {
    let dir = std::env::temp_dir().join(format!("rntuple-copy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for case in [
        "types.vector.nested",
        "types.variant",
        "types.fundamental.real32quant",
    ] {
        let src = conformance_dir().join("write").join(format!("{case}.root"));
        let out = dir.join(format!("{case}.root"));
        for extra in [
            &[][..],
            &["--compression", "lz4:4", "--page-size", "64"][..],
        ] {
            let status = Command::new(env!("CARGO_BIN_EXE_rntuple"))
                .arg("copy")
                .arg(&src)
                .arg(&out)
                .arg("--force")
                .args(extra)
                .status()
                .unwrap();
            assert!(status.success(), "{case} {extra:?}");
            let dump = |p: &std::path::Path| {
                let o = Command::new(env!("CARGO_BIN_EXE_rntuple"))
                    .args(["dump", &p.display().to_string(), "--json"])
                    .output()
                    .unwrap();
                assert!(o.status.success());
                serde_json::from_slice::<Value>(&o.stdout).unwrap()
            };
            assert_eq!(dump(&out), dump(&src), "{case} {extra:?}");
        }
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_rntuple"))
        .args(["copy", "x.root", "y.root", "--compression", "brotli"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
