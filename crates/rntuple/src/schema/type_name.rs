//! C++ type names as RNTuple stores them: a small recursive-descent parser for template
//! type names and the specification's normalization rules ("Type Name Normalization").

use crate::error::{Error, Result};

/// Deepest template nesting the parser accepts (hostile input must not exhaust the stack).
const MAX_TEMPLATE_DEPTH: usize = 64;

/// A parsed, normalized C++ type: a (qualified) name with template arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CppType {
    /// The normalized name without arguments, e.g. `std::vector` or `std::int32_t`.
    pub name: String,
    /// Template arguments in order.
    pub args: Vec<TemplateArg>,
}

/// A template argument: a type or an integer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TemplateArg {
    /// A type argument.
    Type(CppType),
    /// An integer argument (array sizes, bitset widths).
    Int(u64),
}

impl CppType {
    /// A type without template arguments.
    pub(crate) fn plain(name: &str) -> CppType {
        CppType {
            name: name.to_string(),
            args: Vec::new(),
        }
    }

    /// A template type with type arguments.
    pub(crate) fn template(name: &str, args: Vec<CppType>) -> CppType {
        CppType {
            name: name.to_string(),
            args: args.into_iter().map(TemplateArg::Type).collect(),
        }
    }

    /// The name as stored in the field record: typedefs resolved (`Double32_t` becomes `double`).
    pub(crate) fn type_name(&self) -> String {
        let mut s = String::new();
        self.render(&mut s, false);
        s
    }

    /// The type alias as stored: the name keeping `Double32_t`, or empty if it equals the
    /// type name.
    pub(crate) fn type_alias(&self) -> String {
        let mut s = String::new();
        self.render(&mut s, true);
        if s == self.type_name() {
            String::new()
        } else {
            s
        }
    }

    fn render(&self, out: &mut String, keep_alias: bool) {
        if !keep_alias && self.name == "Double32_t" {
            out.push_str("double");
        } else {
            out.push_str(&self.name);
        }
        if self.args.is_empty() {
            return;
        }
        out.push('<');
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match a {
                TemplateArg::Type(t) => t.render(out, keep_alias),
                TemplateArg::Int(n) => {
                    out.push_str(&n.to_string());
                    if *n > (1u64 << 63) {
                        out.push('u');
                    }
                }
            }
        }
        out.push('>');
    }

    /// Type argument `i`, or an error naming the type.
    pub(crate) fn type_arg(&self, i: usize) -> Result<&CppType> {
        match self.args.get(i) {
            Some(TemplateArg::Type(t)) => Ok(t),
            _ => Err(Error::InvalidArgument(format!(
                "type \"{}\": template argument {} must be a type",
                self.type_name(),
                i + 1
            ))),
        }
    }

    /// Integer argument `i`, or an error naming the type.
    pub(crate) fn int_arg(&self, i: usize) -> Result<u64> {
        match self.args.get(i) {
            Some(TemplateArg::Int(n)) => Ok(*n),
            _ => Err(Error::InvalidArgument(format!(
                "type \"{}\": template argument {} must be an integer",
                self.type_name(),
                i + 1
            ))),
        }
    }

    /// All arguments as types (variant, tuple), or an error.
    pub(crate) fn type_args(&self) -> Result<Vec<&CppType>> {
        (0..self.args.len()).map(|i| self.type_arg(i)).collect()
    }
}

/// Normalizes a C++ type name as ROOT stores it in a field record (`int` becomes
/// `std::int32_t`, `ROOT::RVec<T>` becomes `ROOT::VecOps::RVec<T>`, spaces go, ...).
/// `Double32_t` is resolved to `double`; see [`normalize_type_alias`] for the alias.
pub fn normalize_type_name(type_name: &str) -> Result<String> {
    Ok(parse_type_name(type_name)?.type_name())
}

/// The type alias ROOT stores for a C++ type name: the normalized name keeping
/// `Double32_t`, or empty when that equals the normalized type name.
pub fn normalize_type_alias(type_name: &str) -> Result<String> {
    Ok(parse_type_name(type_name)?.type_alias())
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Int(u64),
    Open,
    Close,
    Comma,
}

/// The arguments of a template's argument text (`b,c<d>` of `a<b,c<d>>`), split at its
/// top-level commas and trimmed. For the text of names the parser does not take whole
/// (ROOT's streamer type names: `map<int,TFoo*>`), and for the parts of normalized names.
pub(crate) fn split_template_args(inner: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(inner[start..].trim());
    out
}

/// The `i`-th template argument's text of a normalized type name (empty if none).
pub(crate) fn template_arg(type_name: &str, i: usize) -> String {
    let Some(open) = type_name.find('<') else {
        return String::new();
    };
    let inner = &type_name[open + 1..type_name.len().saturating_sub(1)];
    split_template_args(inner)
        .get(i)
        .map_or_else(String::new, |a| (*a).to_string())
}

fn invalid(type_name: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("C++ type name \"{type_name}\": {why}"))
}

fn tokenize(s: &str) -> Result<Vec<Token>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'<' => {
                out.push(Token::Open);
                i += 1;
            }
            b'>' => {
                out.push(Token::Close);
                i += 1;
            }
            b',' => {
                out.push(Token::Comma);
                i += 1;
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let n = s[start..i]
                    .parse::<u64>()
                    .map_err(|_| invalid(s, "integer argument out of range"))?;
                // Integer suffixes (u, l, ul, ull) carry no meaning here.
                while i < b.len() && matches!(b[i], b'u' | b'U' | b'l' | b'L') {
                    i += 1;
                }
                out.push(Token::Int(n));
            }
            c if c == b':' || c == b'_' || c.is_ascii_alphabetic() => {
                let start = i;
                while i < b.len() && (b[i] == b':' || b[i] == b'_' || b[i].is_ascii_alphanumeric())
                {
                    i += 1;
                }
                let w = &s[start..i];
                let w = w.strip_prefix("::").unwrap_or(w);
                if w.is_empty() || w.ends_with(':') || w.contains(":::") {
                    return Err(invalid(s, "malformed qualified name"));
                }
                out.push(Token::Word(w.to_string()));
            }
            _ => {
                return Err(invalid(
                    s,
                    &format!("unsupported character '{}'", char::from(c)),
                ))
            }
        }
    }
    Ok(out)
}

/// Parses and normalizes a C++ type name.
pub(crate) fn parse_type_name(type_name: &str) -> Result<CppType> {
    let tokens = tokenize(type_name)?;
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        text: type_name,
    };
    let t = p.parse_type(0)?;
    if p.pos != tokens.len() {
        return Err(invalid(type_name, "unexpected text after the type"));
    }
    Ok(t)
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn parse_type(&mut self, depth: usize) -> Result<CppType> {
        if depth > MAX_TEMPLATE_DEPTH {
            return Err(invalid(self.text, "templates nested too deeply"));
        }
        let mut words = Vec::new();
        while let Some(Token::Word(w)) = self.peek() {
            let w = w.clone();
            self.pos += 1;
            if !matches!(
                w.as_str(),
                "const" | "volatile" | "class" | "struct" | "enum" | "typename"
            ) {
                words.push(w);
            }
        }
        let name = combine_words(&words).ok_or_else(|| {
            if words.is_empty() {
                invalid(self.text, "a type name is missing")
            } else {
                invalid(self.text, &format!("\"{}\" is not a type", words.join(" ")))
            }
        })?;
        let mut args = Vec::new();
        if self.peek() == Some(&Token::Open) {
            self.pos += 1;
            loop {
                match self.peek() {
                    Some(Token::Int(n)) => {
                        args.push(TemplateArg::Int(*n));
                        self.pos += 1;
                    }
                    _ => args.push(TemplateArg::Type(self.parse_type(depth + 1)?)),
                }
                match self.peek() {
                    Some(Token::Comma) => self.pos += 1,
                    Some(Token::Close) => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(invalid(self.text, "expected ',' or '>'")),
                }
            }
        }
        // Trailing qualifiers ("int const").
        while let Some(Token::Word(w)) = self.peek() {
            if w == "const" || w == "volatile" {
                self.pos += 1;
            } else {
                break;
            }
        }
        Ok(normalize(name, args))
    }
}

/// Combines the words of a builtin type (`unsigned long long`) or returns the single name.
fn combine_words(words: &[String]) -> Option<String> {
    let builtin = [
        "unsigned", "signed", "short", "long", "int", "char", "bool", "float", "double",
    ];
    if words.len() == 1 && !builtin.contains(&words[0].as_str()) {
        return Some(words[0].clone());
    }
    if words.is_empty() || words.iter().any(|w| !builtin.contains(&w.as_str())) {
        return None;
    }
    let count = |w: &str| words.iter().filter(|x| x.as_str() == w).count();
    let (unsigned, signed) = (count("unsigned"), count("signed"));
    let (short, long, int, char) = (count("short"), count("long"), count("int"), count("char"));
    let (b, f, d) = (count("bool"), count("float"), count("double"));
    if unsigned + signed > 1 || int > 1 || char > 1 || short > 1 || long > 2 {
        return None;
    }
    let sign = if unsigned == 1 { "u" } else { "" };
    if words.len() == 1 && b + f + d == 1 {
        return Some(words[0].clone());
    }
    if b + f + d > 0 {
        return None;
    }
    let name = if char == 1 {
        if short + long + int > 0 {
            return None;
        }
        match (unsigned, signed) {
            (0, 0) => "char".to_string(),
            _ => format!("std::{sign}int8_t"),
        }
    } else if short == 1 {
        if long > 0 {
            return None;
        }
        format!("std::{sign}int16_t")
    } else if long > 0 {
        // LP64: long and long long are both 64 bits wide.
        format!("std::{sign}int64_t")
    } else {
        format!("std::{sign}int32_t")
    };
    Some(name)
}

/// Resolves typedefs and spelling variants of one name, and drops the optional template
/// arguments (allocators, comparators, hashers) of stdlib templates.
fn normalize(name: String, mut args: Vec<TemplateArg>) -> CppType {
    let resolved = match name.as_str() {
        "Bool_t" => "bool",
        "Char_t" => "char",
        "UChar_t" | "Byte_t" | "uint8_t" => "std::uint8_t",
        "int8_t" => "std::int8_t",
        "Short_t" | "int16_t" => "std::int16_t",
        "UShort_t" | "uint16_t" => "std::uint16_t",
        "Int_t" | "int32_t" => "std::int32_t",
        "UInt_t" | "uint32_t" => "std::uint32_t",
        "Long_t" | "Long64_t" | "int64_t" | "ptrdiff_t" | "std::ptrdiff_t" | "ssize_t" => {
            "std::int64_t"
        }
        "ULong_t" | "ULong64_t" | "uint64_t" | "size_t" | "std::size_t" => "std::uint64_t",
        "Float_t" => "float",
        "Double_t" => "double",
        "byte" => "std::byte",
        "string" | "std::__cxx11::string" => "std::string",
        "ROOT::RVec" | "ROOT::Vec" | "RVec" | "ROOT::VecOps::RVec" => "ROOT::VecOps::RVec",
        "RNTupleCardinality" | "ROOT::Experimental::RNTupleCardinality" => {
            "ROOT::RNTupleCardinality"
        }
        other => other,
    };
    let mut name = resolved.to_string();
    const STD_TEMPLATES: [(&str, usize); 17] = [
        ("vector", 1),
        ("array", 2),
        ("bitset", 1),
        ("atomic", 1),
        ("optional", 1),
        ("unique_ptr", 1),
        ("variant", usize::MAX),
        ("pair", 2),
        ("tuple", usize::MAX),
        ("set", 1),
        ("multiset", 1),
        ("unordered_set", 1),
        ("unordered_multiset", 1),
        ("map", 2),
        ("multimap", 2),
        ("unordered_map", 2),
        ("unordered_multimap", 2),
    ];
    let bare = name.strip_prefix("std::").unwrap_or(&name).to_string();
    let known = STD_TEMPLATES.iter().find(|(n, _)| *n == bare);
    if let Some((n, keep)) = known {
        if !args.is_empty() {
            name = format!("std::{n}");
            args.truncate(*keep);
        }
    }
    if name == "ROOT::VecOps::RVec" {
        args.truncate(1);
    }
    CppType { name, args }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_arguments_split_at_the_top_level() {
        let t = "std::map<std::int32_t,std::pair<float,double>>";
        assert_eq!(template_arg(t, 0), "std::int32_t");
        assert_eq!(template_arg(t, 1), "std::pair<float,double>");
        assert_eq!(template_arg(t, 2), "");
        assert_eq!(template_arg("double", 0), "");
    }

    #[test]
    fn normalizes_spellings() {
        let cases = [
            ("int", "std::int32_t"),
            ("unsigned long long", "std::uint64_t"),
            ("unsigned", "std::uint32_t"),
            ("signed char", "std::int8_t"),
            ("unsigned char", "std::uint8_t"),
            ("short int", "std::int16_t"),
            ("long", "std::int64_t"),
            ("const float", "float"),
            ("Float_t", "float"),
            ("Int_t", "std::int32_t"),
            ("std::vector<int>", "std::vector<std::int32_t>"),
            (
                " std::vector < unsigned  int , std::allocator<unsigned int> > ",
                "std::vector<std::uint32_t>",
            ),
            ("ROOT::RVec<float>", "ROOT::VecOps::RVec<float>"),
            (
                "std::map<string, vector<int>>",
                "std::map<std::string,std::vector<std::int32_t>>",
            ),
            ("std::array<float, 3u>", "std::array<float,3>"),
            ("::MyNs::Cls<int,4>", "MyNs::Cls<std::int32_t,4>"),
            ("struct Event", "Event"),
            ("std::vector<Double32_t>", "std::vector<double>"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_type_name(input).unwrap(), want, "{input}");
        }
        assert_eq!(
            normalize_type_alias("std::vector<Double32_t>").unwrap(),
            "std::vector<Double32_t>"
        );
        assert_eq!(normalize_type_alias("Double32_t").unwrap(), "Double32_t");
        assert_eq!(normalize_type_alias("int").unwrap(), "");
    }

    #[test]
    fn refuses_malformed_names() {
        for bad in [
            "",
            "std::vector<",
            "std::vector<int",
            "int*",
            "float&",
            "std::vector<int>>",
            "long long long",
            "unsigned float",
            "a b",
            "x:::y",
        ] {
            assert!(parse_type_name(bad).is_err(), "{bad:?}");
        }
        let deep = "std::vector<".repeat(1000) + "int" + &">".repeat(1000);
        assert!(parse_type_name(&deep).is_err());
    }
}
