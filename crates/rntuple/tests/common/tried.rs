//! What a remote failure's message says was tried, matched by pattern: the message of a
//! retried failure ends with `; N attempt(s) over S s (R retr(y|ies), RNTUPLE_RETRIES or
//! --retries)`, where `S` (the seconds the attempts took) depends on how loaded the
//! machine is. Tests compare the fault, the attempts and the retries exactly and only
//! check that `S` is a number of seconds.
//!
//! One file for the library's unit tests (`io/mod.rs` includes it) and the integration
//! tests (`tests/common`).

/// The parts of a retried failure's message: what failed (the text before
/// `; N attempts`), and the attempts and retries it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tried<'a> {
    /// The message up to the `; ` before the attempts.
    pub(crate) fault: &'a str,
    /// The attempts made.
    pub(crate) attempts: u32,
    /// The retries allowed.
    pub(crate) retries: u32,
}

/// A count followed by ` <singular>` (when 1) or ` <plural>`: the count, and the rest.
fn counted<'a>(text: &'a str, singular: &str, plural: &str) -> Option<(u32, &'a str)> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n: u32 = text.get(..digits)?.parse().ok()?;
    let word = if n == 1 { singular } else { plural };
    let rest = text.get(digits..)?.strip_prefix(' ')?.strip_prefix(word)?;
    Some((n, rest))
}

/// Whether `text` is a number of seconds as messages print them (`0`, `0.5`, `1.25`,
/// `92`).
fn is_seconds(text: &str) -> bool {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(fraction)
}

/// `message` split as [`Tried`], or `None` if it does not end with what a retried failure
/// says it tried (in the exact wording, the number of seconds excepted).
pub(crate) fn tried(message: &str) -> Option<Tried<'_>> {
    let at = message.rfind("; ")?;
    let (fault, tail) = (&message[..at], &message[at + 2..]);
    let (attempts, rest) = counted(tail, "attempt", "attempts")?;
    let rest = rest.strip_prefix(" over ")?;
    let (seconds, rest) = rest.split_once(" s (")?;
    if !is_seconds(seconds) {
        return None;
    }
    let (retries, rest) = counted(rest, "retry", "retries")?;
    (rest == ", RNTUPLE_RETRIES or --retries)").then_some(Tried {
        fault,
        attempts,
        retries,
    })
}

/// `message` split as [`Tried`]; panics (a failed test) naming the message if it does
/// not end as a retried failure's does.
pub(crate) fn expect_tried(message: &str) -> Tried<'_> {
    match tried(message) {
        Some(parts) => parts,
        None => panic!("not a retried failure's message: {message}"),
    }
}

/// Checks that `message` is a retried failure whose fault ends with `fault_end`, after
/// `attempts` attempts of which `retries` were retries; panics (a failed test) naming the
/// message if not.
pub(crate) fn expect_tried_ending(message: &str, fault_end: &str, attempts: u32, retries: u32) {
    let tried = expect_tried(message);
    assert!(tried.fault.ends_with(fault_end), "{message}");
    assert_eq!(
        (tried.attempts, tried.retries),
        (attempts, retries),
        "{message}"
    );
}
