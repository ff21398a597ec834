//! Subject transforms as nats-server defines them: a source filter and a destination where
//! `$n` / `{{wildcard(n)}}` take the n-th token matched by a `*`, a trailing `>` takes what the
//! source's `>` matched, and the mapping functions (`partition`, `random`, `splitFromLeft`,
//! `sliceFromRight`, `split`, `left`, `right`, ...) reshape a token.
//!
//! Who calls it: JetStream (a stream's subject transform, republish, sources, mirrors) and,
//! later, core subject mappings. It knows nothing of streams or routing.

use crate::{is_valid_subject as is_valid_filter, subject_matches_filter};

/// Whether `subject` is matched by `filter` (argument order of the transform code).
fn matches(filter: &str, subject: &str) -> bool {
    subject_matches_filter(subject, filter)
}

/// One mapping function of a destination token, with wildcard numbers (1-based, as written).
#[derive(Debug, Clone, PartialEq)]
enum Function {
    Wildcard(i64),
    /// FNV-1a 32 of the referenced tokens concatenated without separator (of the whole
    /// subject when none are named), modulo `count` (an int32 read as uint32; 0 gives 0).
    Partition {
        count: u32,
        wildcards: Vec<i64>,
    },
    /// A random number in `0..count` (0 when `count` is not positive).
    Random(u32),
    SplitFromLeft(i64, i64),
    SplitFromRight(i64, i64),
    SliceFromLeft(i64, i64),
    SliceFromRight(i64, i64),
    Split(i64, String),
    Left(i64, i64),
    Right(i64, i64),
}

impl Function {
    fn wildcards(&self) -> Vec<i64> {
        match self {
            Function::Partition { wildcards, .. } => wildcards.clone(),
            Function::Random(_) => Vec::new(),
            Function::Wildcard(wildcard)
            | Function::SplitFromLeft(wildcard, _)
            | Function::SplitFromRight(wildcard, _)
            | Function::SliceFromLeft(wildcard, _)
            | Function::SliceFromRight(wildcard, _)
            | Function::Split(wildcard, _)
            | Function::Left(wildcard, _)
            | Function::Right(wildcard, _) => vec![*wildcard],
        }
    }
}

/// nats-server accepts a name whose capitalised letters (as in `SplitFromLeft`) are in
/// either case and whose other letters are lower case: `splitfromleft`, `SplitFromLeft`,
/// but not `SPLITFROMLEFT`.
fn name_is(name: &str, canonical: &str) -> bool {
    name.len() == canonical.len()
        && name.chars().zip(canonical.chars()).all(|(given, wanted)| {
            given == wanted || (wanted.is_ascii_uppercase() && given == wanted.to_ascii_lowercase())
        })
}

/// Go's `strconv.Atoi` after trimming spaces: optional sign, decimal digits.
fn integer(argument: &str) -> Result<i64, ()> {
    let trimmed = argument.trim_matches(' ');
    let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(());
    }
    trimmed.parse().map_err(|_| ())
}

/// Arguments split on `,` followed by any whitespace, as nats-server does.
fn arguments(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = inner;
    while let Some(comma) = rest.find(',') {
        parts.push(&rest[..comma]);
        rest = rest[comma + 1..].trim_start();
    }
    parts.push(rest);
    parts
}

/// `(wildcard, integer)` argument pair shared by the split/slice/left/right functions.
fn index_and_integer(arguments: &[&str]) -> Result<(i64, i64), ()> {
    match arguments {
        [wildcard, number] => Ok((integer(wildcard)?, integer(number)?)),
        _ => Err(()),
    }
}

/// Builds a function taking `(wildcard, integer)`.
type IndexAndInteger = fn(i64, i64) -> Function;

/// The functions taking `(wildcard, integer)`, by their canonical name.
const INDEX_AND_INTEGER_FUNCTIONS: [(&str, IndexAndInteger); 6] = [
    ("SplitFromLeft", Function::SplitFromLeft),
    ("SplitFromRight", Function::SplitFromRight),
    ("SliceFromLeft", Function::SliceFromLeft),
    ("SliceFromRight", Function::SliceFromRight),
    ("Left", Function::Left),
    ("Right", Function::Right),
];

/// A destination token: `Ok(None)` for a literal, `Ok(Some)` for `$n` or a known
/// `{{function(...)}}`, `Err` for a `{{...}}` token nats-server refuses.
fn placeholder(token: &str) -> Result<Option<Function>, ()> {
    if token.len() < 2 {
        return Ok(None);
    }
    if let Some(number) = token.strip_prefix('$') {
        // A `$` token that is not a number is a literal (other features rely on `$` tokens).
        return Ok(integer(number).ok().map(Function::Wildcard));
    }
    let Some(body) = token
        .strip_prefix("{{")
        .and_then(|rest| rest.strip_suffix("}}"))
        .filter(|_| token.len() > 4)
    else {
        return Ok(None);
    };
    let body = body.trim();
    let open = body.find('(').ok_or(())?;
    let inner = body
        .get(open + 1..)
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or(())?;
    let name = body[..open].trim_end();
    let arguments = arguments(inner);
    let function = if name_is(name, "Wildcard") {
        match arguments.as_slice() {
            [single] => Function::Wildcard(integer(single)?),
            _ => return Err(()),
        }
    } else if name_is(name, "Partition") {
        let (count, wildcards) = arguments.split_first().ok_or(())?;
        // nats-server reads the count as an int32 and hashes modulo its uint32 value.
        let count = i32::try_from(integer(count)?).map_err(|_| ())? as u32;
        let wildcards = wildcards
            .iter()
            .map(|argument| integer(argument))
            .collect::<Result<_, _>>()?;
        Function::Partition { count, wildcards }
    } else if name_is(name, "Random") {
        match arguments.as_slice() {
            [count] => Function::Random(u32::try_from(integer(count)?.max(0)).map_err(|_| ())?),
            _ => return Err(()),
        }
    } else if let Some((_, build)) = INDEX_AND_INTEGER_FUNCTIONS
        .iter()
        .find(|(canonical, _)| name_is(name, canonical))
    {
        let (wildcard, number) = index_and_integer(&arguments)?;
        build(wildcard, number)
    } else if name_is(name, "Split") {
        match arguments.as_slice() {
            [wildcard, delimiter] if !delimiter.contains([' ', '.']) => {
                Function::Split(integer(wildcard)?, (*delimiter).to_string())
            }
            _ => return Err(()),
        }
    } else {
        return Err(());
    };
    Ok(Some(function))
}

/// nats-server's destination subject check: non-empty tokens, nothing after `>`, no
/// whitespace outside a `{{...}}` token.
fn is_valid_destination(destination: &str) -> bool {
    let mut after_tail = false;
    for token in destination.split('.') {
        if token.is_empty() || after_tail {
            return false;
        }
        let function_like = token.len() > 4 && token.starts_with("{{") && token.ends_with("}}");
        if function_like {
            continue;
        }
        if token == ">" {
            after_tail = true;
        } else if token.contains([' ', '\t', '\n', '\r', '\x0c']) {
            return false;
        }
    }
    true
}

/// A destination token resolved against the source's wildcards.
#[derive(Debug, Clone)]
enum Part {
    Literal(Box<str>),
    /// `$n` / `{{wildcard(n)}}`: the subject's token at this position.
    Token(usize),
    /// A trailing `>`: what the source's `>` matched.
    Tail,
    Mapped(Function),
}

/// The subject token position wildcard `n` (1-based, as written) captures; nats-server maps
/// numbers below 1 to position 0.
fn wildcard_position(wildcard_positions: &[usize], wildcard: i64) -> Option<usize> {
    match usize::try_from(wildcard) {
        Ok(wildcard) if wildcard >= 1 => wildcard_positions.get(wildcard - 1).copied(),
        _ => Some(0),
    }
}

/// nats-server's `ValidateMapping` + `NewSubjectTransform`: `None` when refused.
fn compile(source: &str, destination: &str) -> Option<Vec<Part>> {
    if !is_valid_filter(source) || !is_valid_destination(destination) {
        return None;
    }
    let source_wildcards = source.split('.').filter(|token| *token == "*").count() as i64;
    let source_tail = source.split('.').next_back() == Some(">");
    let destination_tail = destination.split('.').next_back() == Some(">");
    if destination.split('.').any(|token| token == "*") || source_tail != destination_tail {
        return None;
    }
    let wildcard_positions = wildcard_positions(source);
    destination
        .split('.')
        .map(|token| match placeholder(token).ok()? {
            None if token == ">" => Some(Part::Tail),
            None => Some(Part::Literal(token.into())),
            Some(function) => {
                // Functions may name only wildcards the source has.
                let wildcards = function.wildcards();
                let in_range = (source_wildcards > 0 || wildcards.is_empty())
                    && wildcards
                        .iter()
                        .all(|wildcard| *wildcard <= source_wildcards);
                if !in_range {
                    return None;
                }
                Some(match function {
                    Function::Wildcard(wildcard) => {
                        Part::Token(wildcard_position(&wildcard_positions, wildcard)?)
                    }
                    function => Part::Mapped(function),
                })
            }
        })
        .collect()
}

/// The positions of the source's `*` tokens, in order.
fn wildcard_positions(source: &str) -> Vec<usize> {
    source
        .split('.')
        .enumerate()
        .filter(|(_, token)| *token == "*")
        .map(|(position, _)| position)
        .collect()
}

/// Whether nats-server accepts `source` → `destination` as a subject transform.
pub fn is_valid_transform(source: &str, destination: &str) -> bool {
    if destination.is_empty() {
        // No destination: no transform at all.
        return true;
    }
    let source = if source.is_empty() { ">" } else { source };
    compile(source, destination).is_some()
}

fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

/// `size`-long slices of `token` from the left; the short remainder goes last.
fn slice_from_left(token: &str, size: usize) -> String {
    let pieces: Vec<&str> = token
        .as_bytes()
        .chunks(size)
        .filter_map(|chunk| std::str::from_utf8(chunk).ok())
        .collect();
    pieces.join(".")
}

/// `size`-long slices of `token` from the right; the short remainder goes first.
fn slice_from_right(token: &str, size: usize) -> String {
    let remainder = token.len() % size;
    let mut pieces = Vec::new();
    if remainder > 0 {
        pieces.push(token.get(..remainder).unwrap_or(token));
    }
    let mut start = remainder;
    while start + size <= token.len() {
        pieces.push(token.get(start..start + size).unwrap_or_default());
        start += size;
    }
    pieces.join(".")
}

/// Split `token` on `delimiter`, dropping the empty pieces (as nats-server does).
fn split(token: &str, delimiter: &str) -> String {
    if delimiter.is_empty() {
        // Go's strings.Split on "" splits into single characters.
        return token
            .chars()
            .map(String::from)
            .collect::<Vec<_>>()
            .join(".");
    }
    let pieces: Vec<&str> = token
        .split(delimiter)
        .filter(|piece| !piece.is_empty())
        .collect();
    pieces.join(".")
}

/// Byte offset `position` of `token` if it is strictly inside it and on a char boundary.
fn inside(token: &str, position: i64) -> Option<usize> {
    let position = usize::try_from(position).ok()?;
    (position > 0 && position < token.len() && token.is_char_boundary(position)).then_some(position)
}

/// A random number below `count` without a dependency: std's per-process random hasher
/// keys mixed with a counter.
fn random_below(count: u32) -> u32 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    if count == 0 {
        return 0;
    }
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() % u64::from(count)) as u32
}

fn apply(
    function: &Function,
    subject: &str,
    captured: impl Fn(i64) -> Option<String>,
) -> Option<String> {
    Some(match function {
        Function::Wildcard(wildcard) => captured(*wildcard)?,
        Function::Partition { count, wildcards } => {
            let mut key = String::new();
            if wildcards.is_empty() {
                key.push_str(subject);
            }
            for wildcard in wildcards {
                key.push_str(&captured(*wildcard)?);
            }
            match fnv1a_32(key.as_bytes()).checked_rem(*count) {
                Some(partition) => partition.to_string(),
                None => "0".to_string(),
            }
        }
        Function::Random(count) => random_below(*count).to_string(),
        Function::SplitFromLeft(wildcard, position) => {
            let token = captured(*wildcard)?;
            match inside(&token, *position) {
                Some(at) => format!("{}.{}", &token[..at], &token[at..]),
                None => token,
            }
        }
        Function::SplitFromRight(wildcard, position) => {
            let token = captured(*wildcard)?;
            let at = usize::try_from(*position)
                .ok()
                .and_then(|position| token.len().checked_sub(position))
                .and_then(|at| inside(&token, at as i64));
            match at {
                Some(at) if *position > 0 => format!("{}.{}", &token[..at], &token[at..]),
                _ => token,
            }
        }
        Function::SliceFromLeft(wildcard, size) | Function::SliceFromRight(wildcard, size) => {
            let token = captured(*wildcard)?;
            match usize::try_from(*size) {
                Ok(size) if size > 0 && size < token.len() => {
                    if matches!(function, Function::SliceFromLeft(..)) {
                        slice_from_left(&token, size)
                    } else {
                        slice_from_right(&token, size)
                    }
                }
                _ => token,
            }
        }
        Function::Split(wildcard, delimiter) => split(&captured(*wildcard)?, delimiter),
        Function::Left(wildcard, size) => {
            let token = captured(*wildcard)?;
            match inside(&token, *size) {
                Some(at) => token[..at].to_string(),
                None => token,
            }
        }
        Function::Right(wildcard, size) => {
            let token = captured(*wildcard)?;
            let at = usize::try_from(*size)
                .ok()
                .filter(|size| *size > 0 && *size < token.len())
                .map(|size| token.len() - size)
                .filter(|at| token.is_char_boundary(*at));
            match at {
                Some(at) => token[at..].to_string(),
                None => token,
            }
        }
    })
}

/// A subject transform compiled once (nats-server's `NewSubjectTransform`): the destination's
/// tokens resolved against the source's wildcards, so applying it to a subject parses neither
/// side again and copies the captured tokens straight into the result.
#[derive(Debug, Clone)]
pub struct SubjectTransform {
    source: String,
    /// Tokens in the source.
    source_length: usize,
    /// Wildcard n (1-based) → the subject token position it captures.
    wildcard_positions: Vec<usize>,
    parts: Vec<Part>,
    /// Bytes of the literal tokens and separators (the result's size less the captures).
    fixed_length: usize,
}

impl SubjectTransform {
    /// `None` when nats-server refuses the transform (or the destination is empty).
    pub fn new(source: &str, destination: &str) -> Option<SubjectTransform> {
        if destination.is_empty() {
            return None;
        }
        let source = if source.is_empty() { ">" } else { source };
        let parts = compile(source, destination)?;
        let fixed_length = parts
            .iter()
            .map(|part| match part {
                Part::Literal(token) => token.len() + 1,
                _ => 1,
            })
            .sum();
        Some(SubjectTransform {
            source: source.to_string(),
            source_length: source.split('.').count(),
            wildcard_positions: wildcard_positions(source),
            parts,
            fixed_length,
        })
    }

    /// The source filter the transform applies to.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Map `subject` onto the destination; `None` when it does not match the source.
    pub fn apply(&self, subject: &str) -> Option<String> {
        if !matches(&self.source, subject) {
            return None;
        }
        self.apply_matched(subject)
    }

    /// [`SubjectTransform::apply`] for a subject the caller already matched against the
    /// source. `None` when a function cannot be applied to it.
    pub fn apply_matched(&self, subject: &str) -> Option<String> {
        let mut output = String::with_capacity(self.fixed_length + subject.len());
        for (index, part) in self.parts.iter().enumerate() {
            if index > 0 {
                output.push('.');
            }
            match part {
                Part::Literal(token) => output.push_str(token),
                Part::Token(position) => output.push_str(subject.split('.').nth(*position)?),
                Part::Tail => output.push_str(tail(subject, self.source_length - 1)?),
                Part::Mapped(function) => {
                    let captured = |wildcard: i64| {
                        let position = wildcard_position(&self.wildcard_positions, wildcard)?;
                        subject.split('.').nth(position).map(str::to_string)
                    };
                    output.push_str(&apply(function, subject, captured)?);
                }
            }
        }
        Some(output)
    }
}

/// `subject` from its token `skip` on (`None` when it has fewer tokens).
fn tail(subject: &str, skip: usize) -> Option<&str> {
    if skip == 0 {
        return Some(subject);
    }
    let (at, _) = subject
        .char_indices()
        .filter(|(_, character)| *character == '.')
        .nth(skip - 1)?;
    subject.get(at + 1..)
}

/// Map `subject` (matched by `source`) onto `destination`: `$n` / `{{wildcard(n)}}` take the
/// n-th token matched by a `*` of the source, the other functions reshape such a token, a
/// trailing `>` takes what the source's `>` matched. `None` when the subject does not match
/// or the transform is not valid. Compiles the transform on each call: a caller applying one
/// transform to many subjects keeps a [`SubjectTransform`].
pub fn transform(source: &str, destination: &str, subject: &str) -> Option<String> {
    SubjectTransform::new(source, destination)?.apply(subject)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transforms() {
        assert_eq!(
            transform("orders.*", "copy.$1", "orders.a").as_deref(),
            Some("copy.a")
        );
        assert!(!is_valid_transform("orders.*", "copy.*"));
        assert!(!is_valid_transform("D15", "rp.>"));
        assert!(is_valid_transform("in.>", "out.>"));
        assert!(!is_valid_transform("a.*", "b.{{wildcard(2)}}"));
        assert_eq!(transform(">", "r.>", "a.b").as_deref(), Some("r.a.b"));
        assert_eq!(
            transform("a.*.*", "x.{{wildcard(2)}}.{{wildcard(1)}}", "a.1.2").as_deref(),
            Some("x.2.1")
        );
        assert_eq!(transform("a.*", "fixed", "a.1").as_deref(), Some("fixed"));
        assert_eq!(transform("a.*", "fixed", "b.1"), None);
    }
}

#[cfg(test)]
mod mapping_function_tests {
    use super::*;

    fn mapped(source: &str, destination: &str, subject: &str) -> String {
        transform(source, destination, subject)
            .unwrap_or_else(|| panic!("{destination} on {subject}"))
    }

    #[test]
    fn partition_matches_nats_server_documented_values() {
        for (subject, expected) in [
            ("neworders.customerid1", "neworders.customerid1.0"),
            ("neworders.customerid2", "neworders.customerid2.2"),
            ("neworders.customerid3", "neworders.customerid3.1"),
            ("neworders.customerid4", "neworders.customerid4.2"),
            ("neworders.customerid5", "neworders.customerid5.1"),
            ("neworders.customerid6", "neworders.customerid6.0"),
        ] {
            assert_eq!(
                mapped(
                    "neworders.*",
                    "neworders.{{wildcard(1)}}.{{partition(3,1)}}",
                    subject
                ),
                expected
            );
        }
        for (subject, expected) in [
            ("foo.1.a", "foo.1.a.1"),
            ("foo.1.b", "foo.1.b.0"),
            ("foo.2.b", "foo.2.b.9"),
            ("foo.2.a", "foo.2.a.2"),
        ] {
            assert_eq!(
                mapped(
                    "foo.*.*",
                    "foo.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(10,1,2)}}",
                    subject
                ),
                expected
            );
        }
        assert_eq!(
            mapped("foo.*.*", "p.{{ Partition(10, 1, 2) }}", "foo.1.a"),
            "p.1"
        );
    }

    #[test]
    fn split_and_slice_functions() {
        assert_eq!(mapped("*", "{{splitfromleft(1,3)}}", "12345"), "123.45");
        assert_eq!(mapped("*", "{{SplitFromRight(1,3)}}", "12345"), "12.345");
        assert_eq!(mapped("*", "{{splitfromleft(1,9)}}", "12345"), "12345");
        assert_eq!(
            mapped("*", "{{SliceFromLeft(1,3)}}", "1234567890"),
            "123.456.789.0"
        );
        assert_eq!(
            mapped("*", "{{SliceFromRight(1,3)}}", "1234567890"),
            "1.234.567.890"
        );
        assert_eq!(mapped("*", "{{slicefromleft(1,3)}}", "123456"), "123.456");
        assert_eq!(mapped("*", "{{slicefromright(1,3)}}", "123456"), "123.456");
        assert_eq!(
            mapped("*", "{{split(1,-)}}", "-abc-def--ghi-"),
            "abc.def.ghi"
        );
        assert_eq!(
            mapped("*", "{{split(1,-)}}", "abc-def--ghi-"),
            "abc.def.ghi"
        );
        assert_eq!(
            mapped(
                "*.*",
                "{{split(2,-)}}.{{splitfromleft(1,2)}}",
                "foo.-abc-def--ghij-"
            ),
            "abc.def.ghij.fo.o"
        );
    }

    #[test]
    fn partition_edges_observed_on_nats_server_2_15_1() {
        // Values read from nats-server 2.15.1 stream subject transforms.
        assert_eq!(mapped("x.*", "o.{{partition(1000)}}", "x.abc"), "o.13");
        assert_eq!(mapped("v.*", "o.{{partition(1000,0)}}", "v.abc"), "o.505");
        assert_eq!(
            mapped("u.*", "o.{{partition(-3,1)}}", "u.abc"),
            "o.440920331"
        );
        assert_eq!(mapped("s.*", "o.{{partition(0,1)}}", "s.abc"), "o.0");
        assert_eq!(mapped("y.*", "o.{{wildcard(0)}}", "y.abc"), "o.y");
        assert_eq!(mapped("z.*", "o.{{splitfromleft(0,1)}}", "z.abc"), "o.z");
        for _ in 0..20 {
            let random = mapped("w.*", "o.{{random(5)}}", "w.abc");
            let number: u32 = random.trim_start_matches("o.").parse().expect("a number");
            assert!(number < 5, "{random}");
        }
    }

    #[test]
    fn left_and_right_functions() {
        assert_eq!(mapped("*", "{{left(1,1)}}", "1234"), "1");
        assert_eq!(mapped("*", "{{left(1,3)}}", "1234"), "123");
        assert_eq!(mapped("*", "{{left(1,6)}}", "1234"), "1234");
        assert_eq!(mapped("*", "{{right(1,1)}}", "1234"), "4");
        assert_eq!(mapped("*", "{{Right(1,3)}}", "1234"), "234");
        assert_eq!(mapped("*", "{{right(1,6)}}", "1234"), "1234");
    }

    #[test]
    fn validation_follows_nats_server() {
        for (source, destination) in [
            ("foo.*", "bar.{{Wildcard(1)}}"),
            ("*", "{{splitfromleft(1,1)}}"),
            ("*.*", "{{partition(10,1,2)}}"),
            ("*", "{{split(1,-)}}"),
            ("foo.*", "bar.{{split(1, -)}}"),
            ("foo.*", "bar.{{split(1,.)}}"),
            ("foo.*", "$foo.{{wildcard(1)}}"),
            ("foo.*", "bar.{{partition(10)}}"),
            ("foo.bar", "baz.{{partition(10)}}"),
            ("foo.*", "bar.{{partition(0,1)}}"),
            ("foo.*", "bar.{{partition(-3,1)}}"),
            ("*", "bar.{{random(6)}}"),
            ("foo.*", "bar.{{wildcard(0)}}"),
        ] {
            assert!(
                is_valid_transform(source, destination),
                "{source} -> {destination}"
            );
        }
        for (source, destination) in [
            ("foo.*", "bar.{{unknown(1)}}"),
            ("foo.*", "bar.{{WILDCARD(1)}}"),
            ("foo.*", "bar.{{wildcard()}}"),
            ("foo.*", "bar.{{wildcard(1,2)}}"),
            ("foo.*", "bar.{{wildcard(x)}}"),
            ("foo.*", "bar.{{partition(2147483648)}}"),
            ("foo.*", "bar.{{LEFT(1,1)}}"),
            ("foo.*", "bar.{{random(1,1)}}"),
            ("foo.*", "bar.{{partition(3,2)}}"),
            ("foo.*", "bar.{{splitfromleft(1)}}"),
            ("foo.*", "bar.{{splitfromleft(1,2,3)}}"),
            ("foo.>", "bar.{{wildcard(1)}}.>"),
            ("foo", "bar.{{wildcard(1)}}"),
            ("foo.*", "bar baz"),
        ] {
            assert!(
                !is_valid_transform(source, destination),
                "{source} -> {destination}"
            );
        }
    }
}
