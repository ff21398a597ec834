//! `nats object ...`: add, put (file and standard input), ls, info, get, del, seal, rm.

use test_harness::cli;

use test_harness::cli::{command, field, nats};
use test_harness::TestServer;

#[test]
fn object_bucket_lifecycle() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let work = tempfile::tempdir().expect("tempdir");
    let work = work.path();

    let add = nats(
        &server,
        home,
        &["object", "add", "FILES", "--description", "test files"],
    );
    add.ok();
    assert!(
        add.stdout
            .starts_with("Information for Object Store Bucket FILES created "),
        "{}",
        add.stdout
    );
    assert_eq!(field(&add.stdout, "Description"), Some("test files"));
    assert_eq!(field(&add.stdout, "Sealed"), Some("false"));
    assert_eq!(field(&add.stdout, "JetStream Stream"), Some("OBJ_FILES"));

    let empty = nats(&server, home, &["object", "ls", "FILES"]);
    empty.ok();
    assert_eq!(empty.stdout.trim(), "No entries found");

    // Three chunks of the default 128 KiB, with a header.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let big_path = work.join("big.bin");
    std::fs::write(&big_path, &big).expect("write");
    let mut put = command(
        &server,
        home,
        &["object", "put", "FILES", "big.bin", "-H", "X-Kind:data"],
    );
    put.current_dir(work);
    let put = cli::run(put);
    put.ok();
    assert!(
        put.stdout
            .contains("Object information for FILES > big.bin"),
        "{}",
        put.stdout
    );
    assert_eq!(field(&put.stdout, "Size"), Some("293 KiB"));
    assert_eq!(field(&put.stdout, "Chunks"), Some("3"));
    assert_eq!(field(&put.stdout, "Headers"), Some("X-Kind: data"));
    assert!(
        field(&put.stdout, "Digest").is_some_and(|d| d.starts_with("SHA-256 ") && d.len() == 72),
        "{}",
        put.stdout
    );

    // Standard input needs --name.
    let unnamed = nats(&server, home, &["object", "put", "FILES"]);
    assert_ne!(unnamed.status, 0);
    assert!(
        unnamed.stderr.contains("--name is required"),
        "{}",
        unnamed.stderr
    );
    let input = work.join("input.txt");
    std::fs::write(&input, b"hello world\n").expect("write");
    let piped = cli::run_with_stdin(
        command(
            &server,
            home,
            &["object", "put", "FILES", "--name", "notes/hello.txt"],
        ),
        std::fs::File::open(&input).expect("open"),
    );
    piped.ok();
    assert_eq!(field(&piped.stdout, "Size"), Some("12 B"));

    let listing = nats(&server, home, &["object", "ls", "FILES"]);
    listing.ok();
    assert!(
        listing.stdout.contains("Bucket Contents"),
        "{}",
        listing.stdout
    );
    assert!(
        listing.stdout.lines().any(|l| l.starts_with("│ big.bin ")),
        "{}",
        listing.stdout
    );
    let names = nats(&server, home, &["object", "ls", "FILES", "-n"]);
    let mut names: Vec<&str> = names.stdout.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["big.bin", "notes/hello.txt"]);

    let info = nats(&server, home, &["object", "info", "FILES", "big.bin"]);
    info.ok();
    assert_eq!(field(&info.stdout, "Chunks"), Some("3"));
    assert_eq!(field(&put.stdout, "Digest"), field(&info.stdout, "Digest"));

    // get writes the base name into the working directory, or where -O says.
    let mut get = command(
        &server,
        home,
        &["object", "get", "FILES", "notes/hello.txt"],
    );
    get.current_dir(work);
    let get = cli::run(get);
    get.ok();
    assert!(
        get.stdout.starts_with("Wrote: 12 B to ") && get.stdout.contains("hello.txt in "),
        "{}",
        get.stdout
    );
    assert_eq!(
        std::fs::read(work.join("hello.txt")).expect("read"),
        b"hello world\n"
    );
    let copy = work.join("copy.bin");
    let copy_text = copy.to_string_lossy().to_string();
    nats(
        &server,
        home,
        &["object", "get", "FILES", "big.bin", "-O", &copy_text],
    )
    .ok();
    assert_eq!(std::fs::read(&copy).expect("read"), big);

    let removed = nats(&server, home, &["object", "del", "FILES", "big.bin", "-f"]);
    removed.ok();
    assert!(
        removed.stdout.starts_with("Removed FILES > big.bin"),
        "{}",
        removed.stdout
    );
    let gone = nats(&server, home, &["object", "info", "FILES", "big.bin"]);
    assert_ne!(gone.status, 0);
    assert_eq!(gone.stderr.trim(), "nats: error: nats: object not found");
    let missing = nats(&server, home, &["object", "get", "FILES", "big.bin"]);
    assert_ne!(missing.status, 0);
    assert!(
        missing.stderr.starts_with("nats: error: "),
        "{}",
        missing.stderr
    );

    let sealed = nats(&server, home, &["object", "seal", "FILES", "-f"]);
    sealed.ok();
    assert!(
        sealed.stdout.starts_with("FILES has been sealed"),
        "{}",
        sealed.stdout
    );
    assert_eq!(field(&sealed.stdout, "Sealed"), Some("true"));

    let no_bucket = nats(&server, home, &["object", "info", "NOPE"]);
    assert_ne!(no_bucket.status, 0);
    assert_eq!(
        no_bucket.stderr.trim(),
        "nats: error: nats: bucket not found"
    );

    let buckets = nats(&server, home, &["object", "ls"]);
    assert!(
        buckets.stdout.lines().any(|l| l.starts_with("│ FILES ")),
        "{}",
        buckets.stdout
    );
    nats(&server, home, &["object", "rm", "FILES", "-f"]).ok();
    let none = nats(&server, home, &["object", "ls"]);
    assert_eq!(none.stdout.trim(), "No Object Store buckets found");
}
