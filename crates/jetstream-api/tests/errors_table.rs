//! The committed error table is exactly what the generator makes of the committed
//! `data/errors.json` (nats-server's `server/errors.json`): nobody edited it by hand and it was
//! regenerated after the data changed.

#[path = "../tools/errors_generator.rs"]
mod errors_generator;

#[test]
fn committed_table_is_the_generators_output() {
    let generated = errors_generator::generate(include_str!("../data/errors.json"))
        .expect("errors.json parses");
    let committed = include_str!("../src/errors_generated.rs");
    if generated != committed {
        let first_difference = generated
            .lines()
            .zip(committed.lines())
            .enumerate()
            .find(|(_, (left, right))| left != right)
            .map(|(index, (left, right))| {
                format!(
                    "line {}:\n  generated: {left}\n  committed: {right}",
                    index + 1
                )
            })
            .unwrap_or_else(|| "one is a prefix of the other".to_string());
        panic!(
            "src/errors_generated.rs is not the generator's output; run `cargo run -p jetstream-api --bin generate-errors` ({first_difference})"
        );
    }
}

#[test]
fn every_json_entry_is_in_the_table() {
    let json: serde_json::Value =
        serde_json::from_str(include_str!("../data/errors.json")).expect("errors.json parses");
    let entries = json.as_array().expect("an array");
    assert_eq!(entries.len(), jetstream_api::errors::ALL.len());
    for entry in entries {
        let code = entry["error_code"].as_u64().expect("error_code") as u16;
        let found = jetstream_api::errors::ALL
            .iter()
            .find(|table| table.err_code == code)
            .expect("entry in ALL");
        assert_eq!(found.name, entry["constant"].as_str().expect("constant"));
        assert_eq!(
            found.description,
            entry["description"].as_str().expect("description")
        );
    }
}
