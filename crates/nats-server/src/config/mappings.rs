//! `mappings { }` (or `maps`): at the top level the global account's, inside `accounts { X { } }`
//! account X's. Each entry maps a source subject (wildcards allowed) to one destination (a
//! string) or to weighted destinations (`[{destination, weight, cluster}]`), checked as
//! nats-server's `parseAccountMappings` and `AddWeightedMappings` check them, with its error
//! wording. Parsed here; applied at run time by `accounts/mappings.rs`. Knows nothing of routing.

use super::value::{ConfigError, Entry, Value};

/// One `source: destination(s)` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingOptions {
    pub source: String,
    pub destinations: Vec<MapDestination>,
}

/// One destination of a mapping: its subject (a transform of the source), its weight in
/// percent and the cluster it is scoped to (`None`: any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapDestination {
    pub subject: String,
    pub weight: u8,
    pub cluster: Option<String>,
}

/// Parse a `mappings` block (a bad source subject is reported at the block, as nats-server
/// reports it).
pub(super) fn parse_mappings(entry: &Entry) -> Result<Vec<MappingOptions>, ConfigError> {
    let Value::Map(items) = &entry.value else {
        return Err(entry.error(format!(
            "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
            entry.value.go_type_name()
        )));
    };
    let mut mappings: Vec<MappingOptions> = Vec::new();
    for (source, item) in items {
        if !nats_subject::is_valid_subject(source) {
            return Err(entry.error(format!("Subject {source:?} is not a valid subject")));
        }
        let (destinations, single) = match &item.value {
            Value::String(destination) => (
                vec![MapDestination {
                    subject: destination.clone(),
                    weight: 100,
                    cluster: None,
                }],
                true,
            ),
            Value::Array(entries) => (
                entries
                    .iter()
                    .map(parse_destination)
                    .collect::<Result<Vec<_>, _>>()?,
                false,
            ),
            _ => (vec![parse_destination(item)?], false),
        };
        check_destinations(source, &destinations).map_err(|reason| {
            item.error(match (single, destinations.first()) {
                (true, Some(destination)) => format!(
                    "Error adding mapping for {source:?} to {:?} : {reason}",
                    destination.subject
                ),
                _ => format!("Error adding mapping for {source:?} : {reason}"),
            })
        })?;
        // A later entry for the same source replaces the earlier one, as in nats-server.
        mappings.retain(|existing| existing.source != *source);
        mappings.push(MappingOptions {
            source: source.clone(),
            destinations,
        });
    }
    Ok(mappings)
}

/// nats-server's `parseAccountMapDest`: `{destination|dest, weight, cluster}`, weight required.
fn parse_destination(entry: &Entry) -> Result<MapDestination, ConfigError> {
    let Value::Map(fields) = &entry.value else {
        return Err(entry.error("Expected an entry for the mapping destination"));
    };
    let mut destination = MapDestination {
        subject: String::new(),
        weight: 0,
        cluster: None,
    };
    let mut weighted = false;
    for (key, field) in fields {
        match key.to_ascii_lowercase().as_str() {
            "dest" | "destination" => destination.subject = text(field)?,
            "weight" => {
                let weight = match &field.value {
                    Value::String(text) => {
                        let number = text.strip_suffix('%').unwrap_or(text);
                        go_atoi(number).ok_or_else(|| {
                            field
                                .error(format!("Invalid weight {number:?} for mapping destination"))
                        })?
                    }
                    Value::Integer(number) => *number,
                    other => {
                        return Err(field.error(format!(
                            "Unknown entry type for weight of {}\n",
                            other.go_text()
                        )))
                    }
                };
                destination.weight = u8::try_from(weight)
                    .ok()
                    .filter(|weight| *weight <= 100)
                    .ok_or_else(|| {
                        field.error(format!("Invalid weight {weight} for mapping destination"))
                    })?;
                weighted = true;
            }
            "cluster" => destination.cluster = Some(text(field)?),
            _ => return Err(field.error(format!("Unknown field {key:?} for mapping destination"))),
        }
    }
    if !weighted {
        return Err(entry.error(format!(
            "Missing weight for mapping destination {:?}",
            destination.subject
        )));
    }
    Ok(destination)
}

fn text(entry: &Entry) -> Result<String, ConfigError> {
    match &entry.value {
        Value::String(text) => Ok(text.clone()),
        other => Err(entry.error(format!(
            "interface conversion: interface {{}} is {}, not string",
            other.go_type_name()
        ))),
    }
}

/// Go's `strconv.Atoi`: optional sign, decimal digits, nothing else.
fn go_atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// nats-server's `AddWeightedMappings` checks: no duplicate destination, at most 100 in all per
/// cluster, every destination a valid transform of the source.
fn check_destinations(source: &str, destinations: &[MapDestination]) -> Result<(), String> {
    let mut totals: Vec<(Option<&str>, u32)> = Vec::new();
    for (index, destination) in destinations.iter().enumerate() {
        if destinations[..index]
            .iter()
            .any(|earlier| earlier.subject == destination.subject)
        {
            return Err(format!("duplicate entry for {:?}", destination.subject));
        }
        let cluster = destination.cluster.as_deref();
        let total = match totals.iter_mut().find(|(name, _)| *name == cluster) {
            Some((_, total)) => total,
            None => {
                totals.push((cluster, 0));
                &mut totals.last_mut().ok_or("no total")?.1
            }
        };
        *total += u32::from(destination.weight);
        if *total > 100 {
            return Err("total weight needs to be <= 100".into());
        }
        if let Some(reason) = transform_error(source, &destination.subject) {
            return Err(reason);
        }
    }
    Ok(())
}

const INVALID_DESTINATION: &str = "invalid mapping destination";

/// Why nats-server refuses `source` → `destination` as a mapping (`ValidateMapping` then
/// `NewSubjectTransform`), in its words; `None` when it accepts it.
pub fn transform_error(source: &str, destination: &str) -> Option<String> {
    if destination.is_empty() || nats_subject::is_valid_transform(source, destination) {
        return None;
    }
    let mut after_tail = false;
    for token in destination.split('.') {
        if token.is_empty() || after_tail {
            return Some(format!(
                "{INVALID_DESTINATION}: invalid transform in {token}"
            ));
        }
        if is_function_like(token) {
            if !known_function(token) {
                return Some(format!(
                    "{INVALID_DESTINATION}: unknown function in {token}"
                ));
            }
            continue;
        }
        if token == ">" {
            after_tail = true;
        } else if token.contains([' ', '\t', '\n', '\r', '\x0c']) {
            return Some(format!("{INVALID_DESTINATION}: invalid transform"));
        }
    }
    let source_wildcards = source.split('.').filter(|token| *token == "*").count();
    for token in destination.split('.') {
        let checked = if is_function_like(token) {
            Some(token)
        } else {
            token
                .strip_prefix('$')
                .filter(|number| go_atoi(number).is_some())
        };
        let Some(_) = checked else {
            continue;
        };
        // The token alone against the source: a failure here names the token.
        let alone = match source.split('.').next_back() {
            Some(">") => format!("{token}.>"),
            _ => token.to_string(),
        };
        if nats_subject::is_valid_transform(source, &alone) {
            continue;
        }
        if let Some(index) = first_index_beyond(token, source_wildcards) {
            return Some(format!(
                "{INVALID_DESTINATION}: wildcard index out of range in {token}: [{index}]"
            ));
        }
        return Some(format!(
            "{INVALID_DESTINATION}: function argument is invalid or in the wrong format in {token}"
        ));
    }
    // Wildcards in the destination, or a `>` on one side only.
    Some("invalid subject".into())
}

fn is_function_like(token: &str) -> bool {
    token.len() > 4 && token.starts_with("{{") && token.ends_with("}}")
}

/// A `{{name(...)}}` token naming one of nats-server's functions (any letter case).
fn known_function(token: &str) -> bool {
    let body = token[2..token.len() - 2].trim();
    let Some(open) = body.find('(') else {
        return false;
    };
    let name = body[..open].trim_end().to_ascii_lowercase();
    body.ends_with(')')
        && [
            "wildcard",
            "partition",
            "random",
            "splitfromleft",
            "splitfromright",
            "slicefromleft",
            "slicefromright",
            "split",
            "left",
            "right",
        ]
        .contains(&name.as_str())
}

/// The first wildcard index a destination token names beyond the source's wildcards.
fn first_index_beyond(token: &str, source_wildcards: usize) -> Option<i64> {
    let beyond = |number: i64| usize::try_from(number).is_ok_and(|n| n > source_wildcards);
    if let Some(number) = token.strip_prefix('$').and_then(go_atoi) {
        return beyond(number).then_some(number);
    }
    let body = token[2..token.len() - 2].trim();
    let open = body.find('(')?;
    let name = body[..open].trim_end().to_ascii_lowercase();
    let inner = body.get(open + 1..)?.strip_suffix(')')?;
    let arguments: Vec<&str> = inner.split(',').map(str::trim).collect();
    let indexes: &[&str] = match name.as_str() {
        "random" => &[],
        "partition" => arguments.get(1..).unwrap_or_default(),
        _ => arguments.get(..1).unwrap_or_default(),
    };
    indexes
        .iter()
        .filter_map(|argument| go_atoi(argument))
        .find(|number| beyond(*number))
}

#[cfg(test)]
mod tests {
    use super::transform_error;

    /// Reasons read from `nats-server -t` (2.15.1) on the same mappings.
    #[test]
    fn reasons_follow_nats_server() {
        assert_eq!(transform_error("foo.*.*", "bar.$1"), None);
        assert_eq!(
            transform_error("foo.*", "bar.*").as_deref(),
            Some("invalid subject")
        );
        assert_eq!(
            transform_error("foo.*", "bar.{{unknown(1)}}").as_deref(),
            Some("invalid mapping destination: unknown function in {{unknown(1)}}")
        );
        assert_eq!(
            transform_error("foo.*", "bar.{{wildcard(2)}}").as_deref(),
            Some(
                "invalid mapping destination: wildcard index out of range in {{wildcard(2)}}: [2]"
            )
        );
        assert_eq!(
            transform_error("foo", "bar baz").as_deref(),
            Some("invalid mapping destination: invalid transform")
        );
        assert_eq!(
            transform_error("foo.*", "bar.{{partition(x,1)}}").as_deref(),
            Some(
                "invalid mapping destination: function argument is invalid or in the wrong \
                 format in {{partition(x,1)}}"
            )
        );
    }
}
