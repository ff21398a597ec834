//! Subject grammar as nats-server defines it: tokens separated by `.`, no empty tokens, no
//! whitespace; `*` (one token) and `>` (one or more trailing tokens) are wildcards only as whole
//! tokens, and `>` only as the last token. `foo*` is an ordinary literal token.

/// The token separator.
pub const TOKEN_SEPARATOR: char = '.';
/// Matches exactly one token.
pub const SINGLE_WILDCARD: &str = "*";
/// Matches one or more trailing tokens.
pub const FULL_WILDCARD: &str = ">";

fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Splits a subject into its tokens (no validation).
pub fn tokenize(subject: &str) -> std::str::Split<'_, char> {
    subject.split(TOKEN_SEPARATOR)
}

/// True for a valid subject or filter (wildcards allowed).
pub fn is_valid_subject(subject: &str) -> bool {
    if subject.is_empty() {
        return false;
    }
    let mut after_full_wildcard = false;
    for token in tokenize(subject) {
        if token.is_empty() || after_full_wildcard {
            return false;
        }
        if token.bytes().any(is_blank) {
            return false;
        }
        if token == FULL_WILDCARD {
            after_full_wildcard = true;
        }
    }
    true
}

/// True for a valid subject without wildcard tokens: what may be published to.
pub fn is_valid_literal_subject(subject: &str) -> bool {
    is_valid_subject(subject) && is_literal(subject)
}

/// True when no token is a wildcard (does not check validity).
pub fn is_literal(subject: &str) -> bool {
    tokenize(subject).all(|token| token != SINGLE_WILDCARD && token != FULL_WILDCARD)
}

/// True for a usable queue group name: non-empty, no whitespace.
pub fn is_valid_queue_name(queue: &str) -> bool {
    !queue.is_empty() && !queue.bytes().any(is_blank)
}

/// True when the literal `subject` is matched by `filter` (which may hold wildcards).
pub fn subject_matches_filter(subject: &str, filter: &str) -> bool {
    // Over bytes: a `str` split by a `char` pays for a UTF-8 searcher on every token, and this
    // runs once per cached subject whenever a wildcard subscription comes or goes.
    let separator = |byte: &u8| *byte == b'.';
    let mut subject_tokens = subject.as_bytes().split(separator);
    for filter_token in filter.as_bytes().split(separator) {
        let Some(subject_token) = subject_tokens.next() else {
            return false;
        };
        if filter_token == FULL_WILDCARD.as_bytes() {
            return true;
        }
        if filter_token != SINGLE_WILDCARD.as_bytes() && filter_token != subject_token {
            return false;
        }
    }
    subject_tokens.next().is_none()
}

/// The literal start of a filter, up to its first wildcard token (`a.b.` of `a.b.*.c`, the
/// whole filter when it has none): every subject the filter matches starts with it.
pub fn literal_prefix(filter: &str) -> &str {
    let mut end = 0;
    for token in tokenize(filter) {
        if token == FULL_WILDCARD || token == SINGLE_WILDCARD {
            return &filter[..end];
        }
        end = (end + token.len() + 1).min(filter.len());
    }
    filter
}

/// True when some literal subject is matched by both filters (nats-server's `SubjectsCollide`;
/// streams use it to reject overlapping subjects).
pub fn subjects_overlap(first: &str, second: &str) -> bool {
    let mut first_tokens = tokenize(first);
    let mut second_tokens = tokenize(second);
    loop {
        match (first_tokens.next(), second_tokens.next()) {
            (None, None) => return true,
            (None, Some(_)) | (Some(_), None) => return false,
            (Some(first_token), Some(second_token)) => {
                if first_token == FULL_WILDCARD || second_token == FULL_WILDCARD {
                    return true;
                }
                if first_token != SINGLE_WILDCARD
                    && second_token != SINGLE_WILDCARD
                    && first_token != second_token
                {
                    return false;
                }
            }
        }
    }
}

/// True when every subject matched by `subject` (a filter, wildcards allowed) is also matched by
/// `of_filter`: `foo.bar` ⊆ `foo.*` ⊆ `foo.>`, but `foo.>` ⊄ `foo.*`.
pub fn is_subset_match(subject: &str, of_filter: &str) -> bool {
    let mut subject_tokens = tokenize(subject);
    for filter_token in tokenize(of_filter) {
        let Some(subject_token) = subject_tokens.next() else {
            return false;
        };
        if filter_token == FULL_WILDCARD {
            return true;
        }
        if subject_token == FULL_WILDCARD {
            return false;
        }
        if filter_token == SINGLE_WILDCARD {
            continue;
        }
        if subject_token == SINGLE_WILDCARD || subject_token != filter_token {
            return false;
        }
    }
    subject_tokens.next().is_none()
}

/// The number of tokens in a subject.
pub fn token_count(subject: &str) -> usize {
    tokenize(subject).count()
}
