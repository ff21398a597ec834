//! natscli's body/subject/header templates: `{{Count}}`, `{{.Count}}`, `{{Cnt}}`,
//! `{{TimeStamp}}` (RFC 3339), `{{Unix}}`, `{{UnixNano}}`, `{{Time}}` (3:04PM), `{{ID}}`,
//! `{{Random 10 100}}` and, in replies, `{{Request}}`. A text without `{{` is returned as is;
//! an unknown action is an error and the text is used unexpanded, as natscli does.

use rand::Rng;

use crate::error::CliError;

const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A random a-zA-Z0-9 string between `shortest` and `longest` characters long.
pub fn random_string(shortest: usize, longest: usize) -> String {
    let (low, high) = if shortest > longest {
        (longest, shortest)
    } else {
        (shortest, longest)
    };
    let mut rng = rand::thread_rng();
    let length = if low == high {
        low
    } else {
        rng.gen_range(low..=high)
    };
    (0..length)
        .map(|_| LETTERS[rng.gen_range(0..LETTERS.len())] as char)
        .collect()
}

/// A NUID-like unique id: 22 base-62 characters.
pub fn unique_id() -> String {
    random_string(22, 22)
}

/// Expand the template actions in `text` for message number `count`.
pub fn expand(text: &str, count: usize, request: Option<&str>) -> Result<String, CliError> {
    if !text.contains("{{") {
        return Ok(text.to_string());
    }
    let now = chrono::Local::now();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| CliError::message("template: unclosed action"))?;
        let action = after[..end]
            .trim()
            .trim_start_matches('-')
            .trim_end_matches('-')
            .trim();
        let mut words = action.split_whitespace();
        let function = words.next().unwrap_or("").trim_start_matches('.');
        let arguments: Vec<&str> = words.collect();
        let value = match function {
            "Count" | "Cnt" => count.to_string(),
            "Unix" => now.timestamp().to_string(),
            "UnixNano" => now.timestamp_nanos_opt().unwrap_or_default().to_string(),
            "TimeStamp" => now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "Time" => now.format("%-I:%M%p").to_string(),
            "ID" => unique_id(),
            "Request" if request.is_some() => request.unwrap_or_default().to_string(),
            "Random" => {
                let numbers: Vec<usize> = arguments
                    .iter()
                    .map(|a| a.parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| CliError::message("template: Random needs two numbers"))?;
                match numbers.as_slice() {
                    [low, high] => random_string(*low, *high),
                    _ => return Err(CliError::message("template: Random needs two numbers")),
                }
            }
            other => {
                return Err(CliError::message(format!(
                    "template: function {other:?} not defined"
                )))
            }
        };
        out.push_str(&value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Expand, logging a failure and falling back to the raw text like natscli.
pub fn expand_or_log(text: &str, count: usize, what: &str) -> String {
    match expand(text, count, None) {
        Ok(expanded) => expanded,
        Err(error) => {
            crate::output::log_line(&format!("Could not parse {what} template: {error}"));
            text.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_count_and_random() {
        assert_eq!(expand("msg {{Count}}", 3, None).unwrap(), "msg 3");
        assert_eq!(expand("msg {{ .Count }}", 4, None).unwrap(), "msg 4");
        let random = expand("{{Random 10 100}}", 1, None).unwrap();
        assert!((10..=100).contains(&random.len()));
        assert!(expand("{{Nope}}", 1, None).is_err());
        assert_eq!(expand("plain", 1, None).unwrap(), "plain");
        let stamp = expand("{{TimeStamp}}", 1, None).unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(&stamp).is_ok());
    }
}
