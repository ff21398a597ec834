//! Log time stamps: in the local zone by default, in UTC with `--logtime_utc` or
//! `logtime_utc: true` (read from a start-up failure's `[FTL]` line, the process run with
//! `TZ=Asia/Tokyo`, nine hours east of UTC all year).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_harness::{server_binary, SpawnTied};

/// The hour of the `[FTL]` line a server refusing port 70000 writes, with its arguments
/// (`None` if it wrote none or did not exit within the bound: it is then killed).
fn logged_hour(extra: &[&str]) -> Option<u32> {
    let mut child = Command::new(server_binary())
        .args(["-a", "127.0.0.1", "-p", "70000"])
        .args(extra)
        .env("TZ", "Asia/Tokyo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_tied()
        .expect("run the server binary");
    let deadline = Instant::now() + Duration::from_secs(15);
    while !matches!(child.try_wait(), Ok(Some(_))) {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut text = String::new();
    if let Some(pipe) = child.stderr.as_mut() {
        let _ = pipe.read_to_string(&mut text);
    }
    if let Some(pipe) = child.stdout.as_mut() {
        let _ = pipe.read_to_string(&mut text);
    }
    let line = text.lines().find(|line| line.contains("[FTL]"))?;
    // `[pid] 2026/12/02 11:29:07.489168 [FTL] ...`
    let time = line.split_whitespace().nth(2)?;
    time.split(':').next()?.parse().ok()
}

fn utc_hour() -> u32 {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    ((seconds / 3600) % 24) as u32
}

#[test]
fn time_stamps_follow_logtime_utc() {
    if !std::path::Path::new("/usr/share/zoneinfo/Asia/Tokyo").exists() {
        eprintln!("no zoneinfo for Asia/Tokyo: skipped");
        return;
    }
    let directory = tempfile::tempdir().expect("tempdir");
    let config = directory.path().join("utc.conf");
    std::fs::write(&config, "logtime_utc: true\n").expect("write config");
    let config_text = config.display().to_string();
    // Retried once if the hour turned while the processes ran.
    for _ in 0..2 {
        let before = utc_hour();
        let local = logged_hour(&[]);
        let flag = logged_hour(&["--logtime_utc"]);
        let file = logged_hour(&["-c", &config_text]);
        if utc_hour() != before {
            continue;
        }
        assert_eq!(local, Some((before + 9) % 24), "local time stamps");
        assert_eq!(flag, Some(before), "--logtime_utc");
        assert_eq!(file, Some(before), "logtime_utc: true");
        return;
    }
    panic!("the UTC hour changed twice while the test ran");
}
