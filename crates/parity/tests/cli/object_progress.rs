//! `nats object put/get` draw natscli's progress bar on a terminal for objects over 20 KiB,
//! and none with `--no-progress` or when the output is not a terminal.

use test_harness::cli;

use test_harness::TestServer;

#[test]
fn progress_bars_on_a_terminal_only() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let work = tempfile::tempdir().expect("tempdir");
    cli::nats(&server, home, &["object", "add", "FILES"]).ok();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let source = work.path().join("big.bin");
    std::fs::write(&source, &data).expect("write");
    let source = source.display().to_string();
    let target = work.path().join("copy.bin").display().to_string();

    let mut put = cli::spawn_in_terminal(
        &server,
        home,
        &["object", "put", "FILES", &source, "--name", "big.bin"],
    );
    let shown = put.exp_eof().expect("put exits");
    // (The pseudo-terminal reader shows the block characters byte by byte.)
    assert!(shown.contains("100% (195 KiB/195 KiB)"), "{shown}");
    assert!(
        shown.contains("Object information for FILES > big.bin"),
        "{shown}"
    );

    let mut get = cli::spawn_in_terminal(
        &server,
        home,
        &[
            "object", "get", "FILES", "big.bin", "-O", &target, "--force",
        ],
    );
    let shown = get.exp_eof().expect("get exits");
    assert!(shown.contains("100% (195 KiB/195 KiB)"), "{shown}");
    assert!(shown.contains("Wrote: 195 KiB to "), "{shown}");
    assert_eq!(std::fs::read(&target).expect("copy"), data);

    let mut quiet = cli::spawn_in_terminal(
        &server,
        home,
        &[
            "object",
            "get",
            "FILES",
            "big.bin",
            "-O",
            &target,
            "--force",
            "--no-progress",
        ],
    );
    let shown = quiet.exp_eof().expect("get exits");
    assert!(!shown.contains('%'), "{shown}");
    assert!(shown.contains("Wrote: 195 KiB to "), "{shown}");

    // Not a terminal: no bar either.
    let piped = cli::nats(
        &server,
        home,
        &[
            "object", "get", "FILES", "big.bin", "-O", &target, "--force",
        ],
    );
    assert!(!piped.ok().stdout.contains('%'), "{}", piped.stdout);
}
