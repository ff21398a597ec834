//! Records the build's git commit (`/varz` `git_commit`, nats-server's seven characters) as
//! `RNATS_GIT_COMMIT`: the variable itself when the build sets it (a build without the
//! repository, e.g. the Dockerfile's), else `git rev-parse HEAD` run in the source tree. Without
//! either the field is left out, as nats-server leaves it out when it has no commit.

use std::path::Path;
use std::process::Command;

const VARIABLE: &str = "RNATS_GIT_COMMIT";

fn git(arguments: &[&str]) -> Option<String> {
    let output = Command::new("git").args(arguments).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The commit checked out, and the files whose change means another one is: HEAD (a checkout),
/// its reflog (every commit, rebase or reset), the branch's loose ref and the packed refs.
fn git_commit() -> Option<String> {
    let commit = git(&["rev-parse", "HEAD"])?;
    let mut watched = vec!["HEAD".to_string(), "logs/HEAD".into(), "packed-refs".into()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    Some(commit)
}

fn main() {
    println!("cargo:rerun-if-env-changed={VARIABLE}");
    let commit = std::env::var(VARIABLE)
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(git_commit);
    if let Some(commit) = commit {
        let commit: String = commit.trim().chars().take(7).collect();
        println!("cargo:rustc-env={VARIABLE}={commit}");
    }
}
