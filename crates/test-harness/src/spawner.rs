//! Server processes that die with the test process, however it ends.
//!
//! A test process killed without running its destructors (a CI timeout, ^C, `pkill` of a test
//! binary) would otherwise leave its servers running, holding their ports and temp dirs. Linux's
//! `PR_SET_PDEATHSIG` kills a child when its parent dies, but "parent" means the *thread* that
//! forked it: a server forked from a thread that ends before it would be killed mid-test. Tests
//! start servers from `#[test]` threads, runtime workers, tokio's blocking pool (whose threads
//! end after 10 s idle) and helper threads, so [`SpawnTied::spawn_tied`] forks every server from
//! one thread of this crate's own that lives as long as the process.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::OnceLock;

type Request = (Command, mpsc::Sender<io::Result<Child>>);

/// `spawn`, with the child killed (SIGKILL) when the test process ends.
pub trait SpawnTied {
    /// Spawn the command from the harness's spawner thread (which lives as long as the
    /// process) with the death signal set, and hand back its `Child`. Takes the command's
    /// program, arguments, environment, directory and stdio; the command is left empty.
    fn spawn_tied(&mut self) -> io::Result<Child>;

    /// Set the death signal tied to the *calling* thread: only for a command run to its end by
    /// that thread (`output()`, `status()`), which outlives the child.
    fn dies_with_this_thread(&mut self) -> &mut Command;
}

impl SpawnTied for Command {
    fn spawn_tied(&mut self) -> io::Result<Child> {
        static SPAWNER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();
        let spawner = SPAWNER.get_or_init(|| {
            let (requests, received) = mpsc::channel::<Request>();
            std::thread::Builder::new()
                .name("test-harness-spawner".into())
                .spawn(move || {
                    // The sender lives in the static, so this loop ends only with the process.
                    for (mut command, answer) in received {
                        let _ = answer.send(command.spawn());
                    }
                })
                .expect("start the spawner thread");
            requests
        });
        let mut command = std::mem::replace(self, Command::new(""));
        command.dies_with_this_thread();
        let (answer, answered) = mpsc::channel();
        spawner
            .send((command, answer))
            .map_err(|_| io::Error::other("the spawner thread is gone"))?;
        answered
            .recv()
            .map_err(|_| io::Error::other("the spawner thread did not answer"))?
    }

    fn dies_with_this_thread(&mut self) -> &mut Command {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and only calls prctl(2) and
        // getppid(2), both async-signal-safe.
        unsafe {
            self.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The test process died between the fork and the prctl: no signal will come.
                if libc::getppid() != parent {
                    return Err(io::Error::other("the test process is gone"));
                }
                Ok(())
            })
        }
    }
}
