//! Regenerates `src/errors_generated.rs` from `data/errors.json` (nats-server's error table):
//! `cargo run -p jetstream-api --bin generate-errors`. `tests/errors_table.rs` checks the
//! committed file equals this output.

#[path = "../../tools/errors_generator.rs"]
mod errors_generator;

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let json = match std::fs::read_to_string(crate_dir.join("data/errors.json")) {
        Ok(json) => json,
        Err(error) => {
            eprintln!("generate-errors: data/errors.json: {error}");
            return ExitCode::FAILURE;
        }
    };
    let source = match errors_generator::generate(&json) {
        Ok(source) => source,
        Err(error) => {
            eprintln!("generate-errors: {error}");
            return ExitCode::FAILURE;
        }
    };
    let target = crate_dir.join("src/errors_generated.rs");
    if let Err(error) = std::fs::write(&target, source) {
        eprintln!("generate-errors: {}: {error}", target.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", target.display());
    ExitCode::SUCCESS
}
