//! Labels of fields by what they hold where their names do not say it: the
//! `_collectionN` fields ROOT's `RNTupleImporter` makes of a TTree's counted arrays
//! read `Jet_* (_collection8)`.

use crate::schema::{Descriptor, FieldRole};

/// The most characters of member names a label lists when the members share no prefix.
const LABEL_LIST_CHARS: usize = 32;
/// The most member names such a label lists.
const LABEL_LIST_NAMES: usize = 3;

/// Whether `name` is one of the names ROOT's `RNTupleImporter` gives the fields it makes
/// of a TTree's counted arrays: `_collection` and a number.
fn is_importer_collection(name: &str) -> bool {
    name.strip_prefix("_collection")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The longest prefix (whole characters) all of `names` share.
fn common_prefix<'a>(names: &[&'a str]) -> &'a str {
    let Some((first, rest)) = names.split_first() else {
        return "";
    };
    let mut end = first.len();
    for other in rest {
        let mut shared = 0;
        for ((i, a), b) in first.char_indices().zip(other.chars()) {
            if a != b {
                break;
            }
            shared = i + a.len_utf8();
        }
        end = end.min(shared);
    }
    first.get(..end).unwrap_or("")
}

/// `prefix` up to its last `_` or `.` (included) where that leaves more than
/// separators: the name the members share (`Muon_` of `Muon_p`, from `Muon_pt` and
/// `Muon_phi`), not a piece of one of them.
fn at_separator(prefix: &str) -> &str {
    let cut = prefix
        .rfind(['_', '.'])
        .and_then(|i| prefix.get(..=i))
        .unwrap_or(prefix);
    if cut.chars().any(|c| c != '_' && c != '.') {
        cut
    } else {
        prefix
    }
}

/// `name` in at most `most` characters, ending with `...` when cut.
fn shortened(name: &str, most: usize) -> String {
    if name.chars().count() <= most {
        name.to_string()
    } else {
        let mut short: String = name.chars().take(most.saturating_sub(3)).collect();
        short.push_str("...");
        short
    }
}

/// The label of the field `name` whose items are records of the fields `members`, by
/// what it holds: with members sharing a prefix, that prefix (up to its last `_` or `.`
/// where that leaves more than separators; a prefix of separators alone is none) and
/// `*` (`Jet_* (_collection8)` of `Jet_pt`, `Jet_eta`, ...); with one member, its name (`m1 (_collection0)`); else the first
/// members' names, shortened (`{a, b, c, ...} (_collection3)`); without members,
/// `name`.
pub fn collection_label(name: &str, members: &[&str]) -> String {
    match members {
        [] => name.to_string(),
        [one] => format!("{one} ({name})"),
        _ => {
            let prefix = at_separator(common_prefix(members));
            if prefix.chars().any(char::is_alphanumeric) {
                return format!("{prefix}* ({name})");
            }
            let mut list = String::new();
            let mut shown = 0;
            for member in members {
                let member = shortened(member, LABEL_LIST_CHARS);
                if shown == LABEL_LIST_NAMES
                    || (shown > 0
                        && list.chars().count() + 2 + member.chars().count() > LABEL_LIST_CHARS)
                {
                    break;
                }
                if shown > 0 {
                    list.push_str(", ");
                }
                list.push_str(&member);
                shown += 1;
            }
            if shown < members.len() {
                list.push_str(", ...");
            }
            format!("{{{list}}} ({name})")
        }
    }
}

/// Every field's label, by field id: its qualified name, but for the fields ROOT's
/// `RNTupleImporter` (and `convert`) make of a TTree's counted arrays (`Jet_pt[nJet]`,
/// `Jet_eta[nJet]`, ...): a top-level collection `_collection8` of untyped records `_0`
/// holding `Jet_pt`, `Jet_eta`, ... (which the projected fields `Jet_pt`, ... show).
/// Those collections and their records are labelled by their members
/// ([`collection_label`]): `Jet_* (_collection8)`, `Jet_* (_collection8._0)`.
pub fn field_labels(d: &Descriptor) -> Vec<String> {
    let mut labels: Vec<String> = d.fields.iter().map(|f| d.qualified_name(f.id)).collect();
    for &id in &d.top_level {
        let Some(f) = d.fields.get(id as usize) else {
            continue;
        };
        if f.is_projected() || f.role != FieldRole::Collection || !is_importer_collection(f.name())
        {
            continue;
        }
        let [item] = f.children.as_slice() else {
            continue;
        };
        let Some(record) = d.fields.get(*item as usize) else {
            continue;
        };
        if record.role != FieldRole::Record {
            continue;
        }
        let members: Vec<&str> = record
            .children
            .iter()
            .filter_map(|&c| d.fields.get(c as usize))
            .map(|m| m.name())
            .collect();
        for at in [id, *item] {
            if let Some(label) = labels.get_mut(at as usize) {
                *label = collection_label(label, &members);
            }
        }
    }
    labels
}
