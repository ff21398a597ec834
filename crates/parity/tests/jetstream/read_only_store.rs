//! A store directory the server cannot write (issue 17 item 8): the server refuses to start
//! JetStream with nats-server's `[FTL] Can't start JetStream: storage directory is not writable`
//! and exits 1, instead of starting without its streams. Its log file carries no colour codes.
//! Passes on nats-server 2.15.1 too.
//!
//! Read-only comes from a read-only bind mount when we are root (root writes through file
//! modes), from the directory's mode otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use test_harness::{free_port, server_binary, ServerOptions, SpawnTied, TestServer};

/// Makes a directory read-only until dropped.
struct ReadOnly {
    dir: PathBuf,
    mounted: bool,
}

impl ReadOnly {
    /// None when neither way works here (root without the right to mount).
    fn make(dir: &Path) -> Option<ReadOnly> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if !root {
            set_mode(dir, 0o555);
            return Some(ReadOnly {
                dir: dir.to_path_buf(),
                mounted: false,
            });
        }
        let text = dir.display().to_string();
        let bound = Command::new("mount")
            .args(["--bind", &text, &text])
            .status()
            .is_ok_and(|status| status.success());
        if !bound {
            return None;
        }
        let guard = ReadOnly {
            dir: dir.to_path_buf(),
            mounted: true,
        };
        let read_only = Command::new("mount")
            .args(["-o", "remount,bind,ro", &text])
            .status()
            .is_ok_and(|status| status.success());
        read_only.then_some(guard)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.dir).status();
        } else {
            set_mode(&self.dir, 0o755);
        }
    }
}

fn set_mode(dir: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[tokio::test]
async fn read_only_store_stops_the_server_with_nats_server_wording() {
    let mut server = TestServer::start(ServerOptions {
        jetstream: true,
        ..Default::default()
    });
    let store_dir = server.store_dir.clone().expect("store dir");
    {
        let client = async_nats::connect(server.url()).await.expect("connect");
        let context = jetstream::new(client);
        context
            .create_stream(stream::Config {
                name: "RO".into(),
                subjects: vec!["ro.>".into()],
                ..Default::default()
            })
            .await
            .expect("create stream");
        context
            .publish("ro.a", "kept".into())
            .await
            .expect("publish")
            .await
            .expect("puback");
    }
    server.stop();

    let Some(read_only) = ReadOnly::make(&store_dir) else {
        eprintln!("skipped: cannot make a directory read-only here (root without mount)");
        return;
    };
    let log = server.temp.path().join("read-only.log");
    let mut child = Command::new(server_binary())
        .args([
            "-a",
            "127.0.0.1",
            "-p",
            &free_port().to_string(),
            "-js",
            "-sd",
        ])
        .arg(&store_dir)
        .arg("-l")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_tied()
        .expect("spawn server");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(read_only);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let status = status.unwrap_or_else(|| panic!("server kept running; log:\n{text}"));
    assert_eq!(status.code(), Some(1), "log:\n{text}");
    assert!(
        text.contains("[FTL] Can't start JetStream: storage directory is not writable"),
        "log:\n{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in the log file:\n{text}"
    );

    // Writable again, the stream is all there.
    server.restart();
    let client = async_nats::connect(server.url()).await.expect("connect");
    let mut stream = jetstream::new(client)
        .get_stream("RO")
        .await
        .expect("stream");
    assert_eq!(stream.info().await.expect("info").state.messages, 1);
}
