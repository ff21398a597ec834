//! The query string of a monitoring request, decoded as Go's `url.Query` (percent escapes,
//! `+` as space, first value wins) and read with nats-server's error texts for bad values
//! (`Error decoding boolean for 'subs': strconv.ParseBool: parsing "x": invalid syntax`).
//! An empty or missing value means the option's default, as in nats-server.

/// nats-server's default page size for `/connz` and `/subsz`.
pub const DEFAULT_LIMIT: usize = 1024;

/// How to list subscriptions (`subs`: `1`/`true` for the subjects, `detail` for each one), as
/// `/connz` and `/routez` read it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SubscriptionsShown {
    #[default]
    None,
    Subjects,
    Detail,
}

/// The decoded `key=value` pairs of one request.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    pub fn parse(raw: &str) -> Query {
        let pairs = raw
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (unescape(key), unescape(value))
            })
            .collect();
        Query { pairs }
    }

    /// Already decoded pairs (a `$SYS` request's options).
    pub fn from_pairs(pairs: &[(String, String)]) -> Query {
        Query {
            pairs: pairs.to_vec(),
        }
    }

    /// The first value of `key`, `""` when absent.
    pub fn text(&self, key: &str) -> &str {
        self.pairs
            .iter()
            .find(|(name, _)| name == key)
            .map_or("", |(_, value)| value.as_str())
    }

    /// Go's `strconv.ParseBool`; absent or empty is false.
    pub fn boolean(&self, key: &str) -> Result<bool, String> {
        let value = self.text(key);
        match value {
            "" => Ok(false),
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
            _ => Err(format!(
                "Error decoding boolean for '{key}': strconv.ParseBool: parsing {value:?}: invalid syntax"
            )),
        }
    }

    /// `offset` and `limit` as nats-server reads them: a negative offset is 0, a limit that is
    /// not positive is [`DEFAULT_LIMIT`].
    pub fn page(&self) -> Result<(usize, usize), String> {
        let offset = self.int("offset")?;
        let limit = self.int("limit")?;
        Ok((
            usize::try_from(offset).unwrap_or(0),
            usize::try_from(limit)
                .ok()
                .filter(|limit| *limit > 0)
                .unwrap_or(DEFAULT_LIMIT),
        ))
    }

    /// `subs`: `detail`, or a boolean for the subjects alone.
    pub fn subscriptions_shown(&self) -> Result<SubscriptionsShown, String> {
        Ok(if self.text("subs") == "detail" {
            SubscriptionsShown::Detail
        } else if self.boolean("subs")? {
            SubscriptionsShown::Subjects
        } else {
            SubscriptionsShown::None
        })
    }

    /// Go's `strconv.Atoi`; absent or empty is 0.
    pub fn int(&self, key: &str) -> Result<i64, String> {
        let value = self.text(key);
        if value.is_empty() {
            return Ok(0);
        }
        parse_integer::<i64>(value).map_err(|reason| {
            format!("Error decoding int for '{key}': strconv.Atoi: parsing {value:?}: {reason}")
        })
    }

    /// Go's `strconv.ParseUint`; absent or empty is 0.
    pub fn uint64(&self, key: &str) -> Result<u64, String> {
        let value = self.text(key);
        if value.is_empty() {
            return Ok(0);
        }
        parse_integer::<u64>(value).map_err(|reason| {
            format!(
                "Error decoding uint64 for '{key}': strconv.ParseUint: parsing {value:?}: {reason}"
            )
        })
    }
}

/// Go's two failure words: a syntax error, or a number that does not fit.
fn parse_integer<T: std::str::FromStr<Err = std::num::ParseIntError>>(
    value: &str,
) -> Result<T, &'static str> {
    value.parse::<T>().map_err(|error| match error.kind() {
        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
            "value out of range"
        }
        _ => "invalid syntax",
    })
}

/// Percent escapes and `+` as a space; a bad escape stays as written.
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => out.push(b' '),
            b'%' if index + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        index += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_error_texts() {
        let query = Query::parse("limit=abc&subs=bogus&cid=x&big=99999999999999999999");
        assert_eq!(
            query.int("limit").unwrap_err(),
            r#"Error decoding int for 'limit': strconv.Atoi: parsing "abc": invalid syntax"#
        );
        assert_eq!(
            query.boolean("subs").unwrap_err(),
            r#"Error decoding boolean for 'subs': strconv.ParseBool: parsing "bogus": invalid syntax"#
        );
        assert_eq!(
            query.uint64("cid").unwrap_err(),
            r#"Error decoding uint64 for 'cid': strconv.ParseUint: parsing "x": invalid syntax"#
        );
        assert!(query
            .int("big")
            .unwrap_err()
            .ends_with("value out of range"));
        assert_eq!(query.int("absent"), Ok(0));
    }

    #[test]
    fn pages_and_subscriptions() {
        assert_eq!(Query::parse("").page(), Ok((0, DEFAULT_LIMIT)));
        assert_eq!(
            Query::parse("offset=-3&limit=0").page(),
            Ok((0, DEFAULT_LIMIT))
        );
        assert_eq!(Query::parse("offset=2&limit=5").page(), Ok((2, 5)));
        assert!(Query::parse("offset=x").page().is_err());
        assert_eq!(
            Query::parse("subs=detail").subscriptions_shown(),
            Ok(SubscriptionsShown::Detail)
        );
        assert_eq!(
            Query::parse("subs=1").subscriptions_shown(),
            Ok(SubscriptionsShown::Subjects)
        );
        assert_eq!(
            Query::parse("").subscriptions_shown(),
            Ok(SubscriptionsShown::None)
        );
        assert!(Query::parse("subs=x").subscriptions_shown().is_err());
    }

    #[test]
    fn unescapes() {
        let query = Query::parse("acc=%24G&name=a+b&bad=%zz&tail=%4");
        assert_eq!(query.text("acc"), "$G");
        assert_eq!(query.text("name"), "a b");
        assert_eq!(query.text("bad"), "%zz");
        assert_eq!(query.text("tail"), "%4");
    }
}
