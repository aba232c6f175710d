//! The RNTuple Validation Suite: for each of its 51 cases, `rntuple dump --json` of the
//! file ROOT 6.40 wrote must equal ROOT's own reading of it (shared/conformance).

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

#[test]
fn all_51_cases_read_like_root() {
    let cases = cases();
    assert_eq!(cases.len(), 51, "the suite has 51 cases");
    let mut failures = Vec::new();
    for case in &cases {
        let expected_text =
            std::fs::read_to_string(conformance_dir().join("read").join(format!("{case}.json")))
                .unwrap();
        let expected: Value = serde_json::from_str(&expected_text).unwrap();
        // ROOT's error cases render as {"error": message}: we must fail with that message.
        if let Some(message) = expected.get("error").and_then(Value::as_str) {
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
        let got: Value = match serde_json::from_str(&out.stdout) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{case}: output is not JSON: {e}"));
                continue;
            }
        };
        // The compression.* references hold the sum of the Int64 field over all entries
        // (the suite's read_compression.hxx), not the entries themselves.
        let got = if case.starts_with("compression.") {
            let sum: i64 = got
                .as_array()
                .map(|entries| entries.iter().filter_map(|e| e["Int64"].as_i64()).sum())
                .unwrap_or(i64::MIN);
            serde_json::json!({ "Int64": sum })
        } else {
            got
        };
        // Unordered sets have no order: ROOT's reference lists them in libstdc++'s hash
        // table order after re-inserting (every level reversed), we in the stored order.
        // In these cases every list level is an unordered set, so compare as multisets.
        let unordered = case.starts_with("types.unordered_set.")
            || case.starts_with("types.unordered_multiset.");
        let (got, expected) = if unordered {
            (sort_lists(got), sort_lists(expected))
        } else {
            (got, expected)
        };
        if let Some(diff) = first_difference(case, &got, &expected) {
            failures.push(diff);
        }
    }
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
