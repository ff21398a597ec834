//! Framing shared by the client-op and server-op parsers: operation keywords, control lines,
//! argument splitting, sizes, and the payload that follows PUB/HPUB/MSG/HMSG.
//!
//! Nothing here consumes bytes from the caller's buffer; the parsers decide when a whole frame
//! is present and split it off in one piece.

use std::ops::Range;

use crate::error::ProtocolError;

/// What may follow an operation keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterKeyword {
    /// A space or tab must follow (PUB, SUB, MSG, -ERR...).
    Separator,
    /// Optional blanks, then the argument (CONNECT, INFO: `CONNECT{}` is accepted by nats-server).
    OptionalSeparator,
    /// Anything up to the end of line is ignored (PING, PONG, +OK).
    IgnoredRest,
}

pub(crate) struct Keyword<K> {
    pub(crate) name: &'static [u8],
    pub(crate) kind: K,
    pub(crate) after: AfterKeyword,
}

pub(crate) enum KeywordMatch<K> {
    NeedMore,
    Found {
        kind: K,
        keyword_len: usize,
        after: AfterKeyword,
    },
}

/// Matches the operation keyword at the start of `buf`, case-insensitively, byte by byte as
/// nats-server's state machine does, so an unknown operation is reported as soon as its first
/// wrong byte arrives, however the stream is split.
pub(crate) fn match_keyword<K: Copy>(
    buf: &[u8],
    table: &[Keyword<K>],
) -> Result<KeywordMatch<K>, ProtocolError> {
    let mut any_prefix = false;
    for keyword in table {
        let compared = keyword.name.len().min(buf.len());
        if !buf[..compared].eq_ignore_ascii_case(&keyword.name[..compared]) {
            continue;
        }
        if buf.len() < keyword.name.len() {
            any_prefix = true;
            continue;
        }
        if keyword.after == AfterKeyword::Separator {
            match buf.get(keyword.name.len()) {
                None => return Ok(KeywordMatch::NeedMore),
                Some(b' ' | b'\t') => {}
                Some(_) => return Err(ProtocolError::UnknownOperation),
            }
        }
        return Ok(KeywordMatch::Found {
            kind: keyword.kind,
            keyword_len: keyword.name.len(),
            after: keyword.after,
        });
    }
    if any_prefix {
        Ok(KeywordMatch::NeedMore)
    } else {
        Err(ProtocolError::UnknownOperation)
    }
}

/// A complete control line found in the buffer.
#[derive(Debug, Clone)]
pub(crate) struct ControlLine {
    /// Bytes up to and including the `\n`.
    pub(crate) line_len: usize,
    /// The argument range (blanks after the keyword skipped, trailing `\r` dropped).
    pub(crate) arg: Range<usize>,
}

impl ControlLine {
    /// The length checked against max_control_line: the argument, or for a keyword whose rest
    /// is ignored (PING, PONG, +OK) everything after it, measured as [`partial_line_len`]
    /// measures a line still arriving, so the outcome never depends on how reads were split.
    pub(crate) fn measured_len(&self, keyword_len: usize, after: AfterKeyword) -> usize {
        match after {
            AfterKeyword::IgnoredRest => self.line_len - 1 - keyword_len,
            _ => self.arg.len(),
        }
    }
}

/// The length of a control line whose end has not arrived, for the max_control_line check
/// (nats-server bounds a partial argument; for PING and its kind it has no bound, we keep one so
/// junk after PING cannot fill memory).
pub(crate) fn partial_line_len(buf: &[u8], keyword_len: usize, after: AfterKeyword) -> usize {
    match after {
        AfterKeyword::IgnoredRest => buf.len().saturating_sub(keyword_len),
        _ => partial_argument_len(buf, keyword_len),
    }
}

/// Where an argument starts: after the keyword and any blanks.
pub(crate) fn argument_start(buf: &[u8], keyword_len: usize, limit: usize) -> usize {
    let mut position = keyword_len;
    while position < limit && matches!(buf[position], b' ' | b'\t') {
        position += 1;
    }
    position
}

/// Finds the end of the control line, resuming the search at `scan_from` so a long partial line is
/// not rescanned on every read. Returns `None` and updates `scan_from` when the line is incomplete.
pub(crate) fn find_control_line(
    buf: &[u8],
    keyword_len: usize,
    scan_from: &mut usize,
) -> Option<ControlLine> {
    let from = (*scan_from).max(keyword_len).min(buf.len());
    match memchr::memchr(b'\n', &buf[from..]) {
        None => {
            *scan_from = buf.len();
            None
        }
        Some(offset) => {
            *scan_from = 0;
            let newline = from + offset;
            let arg_end = if newline > keyword_len && buf[newline - 1] == b'\r' {
                newline - 1
            } else {
                newline
            };
            let arg_start = argument_start(buf, keyword_len, arg_end);
            Some(ControlLine {
                line_len: newline + 1,
                arg: arg_start..arg_end,
            })
        }
    }
}

/// Length of the argument of a partial control line, as nats-server measures it for its
/// max_control_line check on split reads.
fn partial_argument_len(buf: &[u8], keyword_len: usize) -> usize {
    let start = argument_start(buf, keyword_len, buf.len());
    let mut end = buf.len();
    if end > start && buf[end - 1] == b'\r' {
        end -= 1;
    }
    end - start
}

pub(crate) const MAX_ARGUMENTS: usize = 6;

/// Splits `buf[arg]` on blanks (space, tab, CR, LF, as nats-server's argument splitter) into
/// absolute ranges. Returns the number of arguments, or `None` when there are more than
/// [`MAX_ARGUMENTS`].
pub(crate) fn split_arguments(
    buf: &[u8],
    arg: Range<usize>,
    out: &mut [Range<usize>; MAX_ARGUMENTS],
) -> Option<usize> {
    let mut count = 0;
    let mut position = arg.start;
    while let Some(argument) = next_argument(buf, &mut position, arg.end) {
        if count == MAX_ARGUMENTS {
            return None;
        }
        out[count] = argument;
        count += 1;
    }
    Some(count)
}

/// The next blank-separated argument of `buf[*position..end]`, moving `position` past it.
pub(crate) fn next_argument(buf: &[u8], position: &mut usize, end: usize) -> Option<Range<usize>> {
    while *position < end && is_blank(buf[*position]) {
        *position += 1;
    }
    if *position == end {
        return None;
    }
    let start = *position;
    *position = find_blank(&buf[start..end]).map_or(end, |offset| start + offset);
    Some(start..*position)
}

fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

/// The first blank in `bytes`. Tokens are short, so instead of a SIMD search (whose setup costs
/// more than the scan) this looks at 8 bytes at a time for any byte below 0x21, then checks the
/// candidates one by one (control bytes other than blanks are legal inside tokens).
fn find_blank(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let mut position = 0;
    while position + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[position..position + 8]);
        let word = u64::from_le_bytes(word);
        // High bit set in each byte below 0x21 (exact for the lowest such byte).
        let below_0x21 = word.wrapping_sub(ONES * 0x21) & !word & HIGH_BITS;
        if below_0x21 != 0 {
            let first = position + (below_0x21.trailing_zeros() / 8) as usize;
            if let Some(offset) = bytes[first..position + 8].iter().position(|&b| is_blank(b)) {
                return Some(first + offset);
            }
        }
        position += 8;
    }
    bytes[position..]
        .iter()
        .position(|&byte| is_blank(byte))
        .map(|offset| position + offset)
}

/// nats-server's size parser: 1 to 9 ASCII digits, nothing else.
pub(crate) fn parse_size(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    let mut value = 0usize;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        value = value * 10 + usize::from(digit - b'0');
    }
    Some(value)
}

/// A PUB/HPUB/MSG/HMSG whose control line has been parsed and whose payload is awaited.
#[derive(Debug, Clone)]
pub(crate) struct PendingPayload {
    pub(crate) line_len: usize,
    pub(crate) subject: Range<usize>,
    pub(crate) sid: Option<Range<usize>>,
    pub(crate) reply: Option<Range<usize>>,
    /// `Some` for HPUB/HMSG: length of the header block inside the payload.
    pub(crate) headers_len: Option<usize>,
    /// Headers plus payload.
    pub(crate) total_len: usize,
}

impl PendingPayload {
    /// Bytes of the whole frame: control line, headers, payload and the closing CRLF.
    pub(crate) fn frame_len(&self) -> usize {
        frame_len(self.line_len, self.total_len)
    }

    /// Checks whatever of the closing CRLF has arrived. `Ok(true)` when the frame is complete.
    pub(crate) fn check_end(&self, buf: &[u8]) -> Result<bool, ProtocolError> {
        check_frame_end(buf, self.line_len, self.total_len)
    }
}

/// Bytes of a whole frame: control line, body (headers and payload) and the closing CRLF.
pub(crate) fn frame_len(line_len: usize, total_len: usize) -> usize {
    line_len + total_len + 2
}

/// Checks whatever of the CRLF closing a frame's body has arrived. `Ok(true)` when the frame
/// is complete.
pub(crate) fn check_frame_end(
    buf: &[u8],
    line_len: usize,
    total_len: usize,
) -> Result<bool, ProtocolError> {
    let cr = line_len + total_len;
    if let Some(&byte) = buf.get(cr) {
        if byte != b'\r' {
            return Err(ProtocolError::UnknownOperation);
        }
    }
    if let Some(&byte) = buf.get(cr + 1) {
        if byte != b'\n' {
            return Err(ProtocolError::UnknownOperation);
        }
        return Ok(true);
    }
    Ok(false)
}
