//! How the command fails: one sentence on standard error that names what went wrong and
//! where (the file, the field, the option), the way out where there is one (`rntuple
//! recover`, `--force`, `--skip-unsupported`), and the exit status: 2 for a usage error
//! (a bad option, a name that does not exist, an output that exists), 1 for bad data or
//! a failed read or write.

use rntuple::recover::{examine, FileState};
use std::process::ExitCode;

/// A failed command.
pub(crate) enum Failure {
    /// The command line asks for something impossible: exit status 2.
    Usage(String),
    /// Reading or writing failed: exit status 2 when the library says the caller asked
    /// for something impossible ([`rntuple::Error::InvalidArgument`], an output that
    /// exists), else 1.
    Input(rntuple::Error),
    /// Bad data, said in full (`verify`'s summary, failed conversions): exit status 1.
    Bad(String),
    /// Writing the command's output failed: exit status 1 (0 for a closed pipe, as
    /// `head` closes it).
    Output(std::io::Error),
}

impl From<rntuple::Error> for Failure {
    fn from(e: rntuple::Error) -> Self {
        Failure::Input(e)
    }
}

impl From<rntuple_io::Error> for Failure {
    fn from(e: rntuple_io::Error) -> Self {
        Failure::Input(e.into())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Output(e)
    }
}

impl Failure {
    /// The message and exit status; `inputs` are the files the command reads (paths or
    /// URLs): the input an error names gets the way out of its state when there is one.
    pub(crate) fn report(self, inputs: &[String]) -> ExitCode {
        match self.render(inputs) {
            Some((message, status)) => {
                eprintln!("rntuple: {message}");
                ExitCode::from(status)
            }
            None => ExitCode::SUCCESS,
        }
    }

    /// The message (with the way out for the input it names, among `inputs`) and the
    /// exit status; `None` for a closed pipe, which is no failure.
    pub(crate) fn render(&self, inputs: &[String]) -> Option<(String, u8)> {
        Some(match self {
            Failure::Usage(m) => (m.clone(), 2),
            Failure::Bad(m) => (m.clone(), 1),
            Failure::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return None,
            Failure::Output(e) => (format!("cannot write the output: {e}"), 1),
            Failure::Input(e) => {
                let mut message = describe(e);
                if let Some(hint) = way_out(e, &message, inputs) {
                    message = format!("{message}; {hint}");
                }
                (message, if is_usage(e) { 2 } else { 1 })
            }
        })
    }

    /// Reports the failure of one input among many (one line each, the command going
    /// on): its message with its way out, naming `file` (a path or URL) if the message
    /// does not.
    pub(crate) fn report_input(&self, file: &str) {
        let Some((message, _)) = self.render(&[file.to_string()]) else {
            return;
        };
        if message.contains(file) {
            eprintln!("rntuple: {message}");
        } else {
            eprintln!("rntuple: {file}: {message}");
        }
    }
}

/// Whether the library's error is the caller's doing: an impossible argument or an
/// output that exists.
fn is_usage(e: &rntuple::Error) -> bool {
    matches!(
        e.root_cause(),
        rntuple::Error::InvalidArgument(_) | rntuple::Error::OutputExists { .. }
    )
}

/// The error's message for the command line: without the `invalid argument:` label the
/// exit status already tells, and with the option that replaces an existing output.
pub(crate) fn describe(e: &rntuple::Error) -> String {
    // Names and types from a file may hold control characters: shown escaped.
    let text = rntuple::error::printable(&e.to_string()).replacen("invalid argument: ", "", 1);
    match e.root_cause() {
        rntuple::Error::OutputExists { .. } => format!("{text}; pass --force to replace it"),
        _ => text,
    }
}

/// What to do about the error, for the input whose name its message holds: `rntuple
/// recover` for the unfinished output of a writer that stopped (a `.partial` file, a
/// file cut short), with the entries it would save. Only local files are examined (a
/// scan of the file, on this error path only).
fn way_out(e: &rntuple::Error, message: &str, inputs: &[String]) -> Option<String> {
    use rntuple::Error as E;
    if !matches!(
        e.root_cause(),
        E::Truncated { .. } | E::Corrupt { .. } | E::NotFound(_) | E::ChecksumMismatch { .. }
    ) {
        return None;
    }
    // The longest name first: `a.root` must not claim the message of `data.root`.
    let mut named: Vec<&String> = inputs
        .iter()
        .filter(|f| message.contains(f.as_str()))
        .collect();
    named.sort_by_key(|f| std::cmp::Reverse(f.len()));
    let file = named.first()?;
    if rntuple_io::url_scheme(file).is_some_and(|s| s != "file") {
        return None;
    }
    let source = rntuple_io::open_source(file).ok()?;
    match examine(source) {
        Ok(FileState::Recoverable(recovery)) => {
            let entries: u64 = recovery.rntuples.iter().map(|r| r.entries).sum();
            Some(format!(
                "it looks like the unfinished output of a writer that stopped: `rntuple recover {file} OUT.root` saves the {entries} entries of its committed cluster groups"
            ))
        }
        Ok(FileState::Complete { .. }) => None,
        Err(_) if file.ends_with(".partial") => Some(format!(
            "{file} is the unfinished output of a writer that stopped before its first checkpoint: no entry in it can be recovered"
        )),
        Err(_) if matches!(e.root_cause(), E::Truncated { .. }) => Some(
            "the file is shorter than it says (an interrupted copy or download?), and `rntuple recover` finds no committed entries in it".to_string(),
        ),
        Err(_) => None,
    }
}
