//! TTrees in `ls` and `info`: listed as TTrees (name, entries, branches), described
//! branch by branch, with the command that converts them to RNTuple.

use super::Failure;
use rntuple::ttree::{Branch, ElementInfo, StreamerInfo, Tree, TreeFile};
use std::io::Write;

/// The `ls` line of the TTree `path` of `file`: path, `TTree`, entries and top-level
/// branch names (the first ones of many: [`crate::ls::name_list`]).
pub(crate) fn ls_line(file: &str, path: &str, tree: &Tree) -> String {
    let names: Vec<&str> = tree.branches.iter().map(|b| b.name.as_str()).collect();
    format!(
        "{path}\tTTree\t{} entries\t{} branches: {}",
        tree.entries,
        names.len(),
        crate::ls::name_list(&names, &format!("{file}:{path}"))
    )
}

/// The command converting the TTree `tree` (or, without one, any) of `file`.
pub(crate) fn convert_hint(file: &str, tree: Option<&str>) -> String {
    format!("rntuple convert {file}:{} OUT.root", tree.unwrap_or("TREE"))
}

/// Every TTree of `file` as `(path, tree)`, in keys-list order.
pub(crate) fn all_trees(trees: &TreeFile) -> Result<Vec<(String, Tree)>, Failure> {
    let mut out = Vec::new();
    for entry in trees.tree_entries()? {
        let tree = trees.load(&entry)?;
        out.push((entry.path, tree));
    }
    Ok(out)
}

/// `info` of TTrees: the tree `name`, or every tree of the file when `None`. Returns
/// false (printing nothing) when there is no such tree, so that the caller reports its
/// own error.
pub(crate) fn info(file: &str, name: Option<&str>, out: &mut impl Write) -> Result<bool, Failure> {
    let Ok(trees) = TreeFile::open_path(file) else {
        return Ok(false);
    };
    let selected = match name {
        Some(n) => match trees.tree(Some(n)) {
            Ok(one) => vec![one],
            Err(rntuple::Error::NotFound(_)) => return Ok(false),
            Err(e) => return Err(e.into()),
        },
        None => all_trees(&trees)?,
    };
    if selected.is_empty() {
        return Ok(false);
    }
    // Member types of split objects come from the streamer infos; without them (none
    // stored, or unreadable) the members are shown by their class only.
    let infos = if selected
        .iter()
        .any(|(_, t)| t.all_branches().iter().any(|b| b.element.is_some()))
    {
        trees.streamer_infos().unwrap_or_default()
    } else {
        Vec::new()
    };
    for (i, (path, tree)) in selected.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write!(out, "{}", describe(file, path, tree, &infos))?;
    }
    Ok(true)
}

/// The description of one TTree: name, title, entries, and each branch (class, leaves or
/// stored class, sub-branches indented), then how to convert it. `infos`: the file's
/// streamer infos, naming the types of split objects' members.
pub(crate) fn describe(file: &str, path: &str, tree: &Tree, infos: &[StreamerInfo]) -> String {
    let mut text = format!("TTree \"{path}\" in {file}");
    if !tree.title.is_empty() {
        text.push_str(&format!(": \"{}\"", tree.title));
    }
    text.push('\n');
    text.push_str(&format!("entries: {}\n", tree.entries));
    text.push_str(&format!(
        "branches: {} ({} at every level)\n",
        tree.branches.len(),
        tree.all_branches().len()
    ));
    let width = tree
        .all_branches()
        .iter()
        .map(|b| b.name.len())
        .max()
        .unwrap_or(0);
    for b in &tree.branches {
        branch_lines(b, 1, width, infos, &mut text);
    }
    text.push_str(&format!(
        "this is a TTree, not an RNTuple: convert it with: {}\n",
        convert_hint(file, Some(path))
    ));
    text
}

/// One line per branch: indented name, branch class, what it stores; its sub-branches
/// one level deeper.
fn branch_lines(b: &Branch, depth: usize, width: usize, infos: &[StreamerInfo], text: &mut String) {
    let indent = "  ".repeat(depth);
    let pad = (width + 8).saturating_sub(2 * depth);
    let stores = match &b.element {
        Some(e) => element(e, infos),
        None => {
            let leaves: Vec<&str> = b.leaves.iter().map(|l| l.class_name.as_str()).collect();
            format!("{} ({})", b.title, leaves.join(", "))
        }
    };
    let line = format!("{indent}{:<pad$}  {:<14}  {stores}", b.name, b.class_name);
    text.push_str(line.trim_end());
    text.push('\n');
    for sub in &b.branches {
        branch_lines(sub, depth + 1, width, infos, text);
    }
}

/// What a `TBranchElement` stores: a whole object or collection (`class C`, `of E` for
/// the elements of a split collection), or a member of a split object (its type and
/// name, as the streamer info of the class gives them).
fn element(e: &ElementInfo, infos: &[StreamerInfo]) -> String {
    let member = usize::try_from(e.id).ok().and_then(|id| {
        infos
            .iter()
            .filter(|i| i.class_name == e.class_name)
            .find(|i| i.class_version == i32::from(e.class_version))
            .or_else(|| infos.iter().find(|i| i.class_name == e.class_name))
            .and_then(|i| i.elements.get(id))
    });
    let mut s = match (member, e.id) {
        (Some(m), _) => {
            let rank = usize::try_from(m.array_dim).unwrap_or(0);
            let dims: String = m
                .max_index
                .iter()
                .take(rank)
                .map(|n| format!("[{n}]"))
                .collect();
            format!("member {} {}::{}{dims}", m.type_name, e.class_name, m.name)
        }
        (None, id) if id >= 0 => format!("member of {}", e.class_name),
        (None, _) => format!("class {}", e.class_name),
    };
    if !e.clones_name.is_empty() {
        s.push_str(&format!(" of {}", e.clones_name));
    }
    s
}
