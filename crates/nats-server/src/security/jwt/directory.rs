//! The full resolver's directory, in nats-server's layout (`server/dirstore.go`, unsharded):
//! one file `<dir>/<account public key>.jwt` holding the account JWT as pushed, nothing else.
//! A deleted account's file is renamed `<key>.jwt.deleted` (removed with `hard_delete`).
//!
//! Used by the resolver (`resolver.rs`) only; the checks of the JWTs are the resolver's. A cache
//! resolver's directory keeps at most `limit` files, each for `ttl` (`cache.rs`).

use std::path::{Path, PathBuf};

const EXTENSION: &str = ".jwt";

/// Where the full resolver keeps its account JWTs, and what it allows.
pub struct Directory {
    path: PathBuf,
    allow_delete: bool,
    hard_delete: bool,
    /// At most this many accounts (0: no limit; not enforced for a cache).
    limit: usize,
    /// The cache resolver's directory (accounts fetched from full-resolver peers).
    pub cache: bool,
    /// The cache resolver's files, for its `limit` and `ttl`.
    tracker: Option<super::cache::Tracker>,
}

impl Directory {
    /// The directory, created when missing (as nats-server creates it).
    pub fn new(path: &Path, allow_delete: bool, hard_delete: bool, limit: usize) -> Directory {
        if let Err(error) = std::fs::create_dir_all(path) {
            tracing::error!("resolver dir {}: {error}", path.display());
        }
        Directory {
            path: path.to_path_buf(),
            allow_delete,
            hard_delete,
            limit,
            cache: false,
            tracker: None,
        }
    }

    /// The cache resolver's directory: at most `limit` files (0: nats-server's 1,000), each
    /// kept for `ttl` (zero: until its JWT expires).
    pub fn into_cache(mut self, ttl: std::time::Duration) -> Directory {
        self.cache = true;
        self.tracker = Some(super::cache::Tracker::new(self.limit, ttl));
        self
    }

    /// How often [`Directory::expire`] should run; `None` for a full resolver's.
    pub fn expiry_interval(&self) -> Option<std::time::Duration> {
        self.tracker
            .as_ref()
            .map(super::cache::Tracker::check_interval)
    }

    /// `key`'s account is used (a user of it connects): the cache's bookkeeping counts the
    /// first use after a start as a read of its file.
    pub fn used(&self, key: &str) {
        if let Some(tracker) = &self.tracker {
            tracker.used(key);
        }
    }

    /// Remove the cache's expired files; their keys.
    pub fn expire(&self) -> Vec<String> {
        let Some(tracker) = &self.tracker else {
            return Vec::new();
        };
        let expired = tracker.expired(std::time::SystemTime::now());
        for key in &expired {
            self.remove(key);
        }
        expired
    }

    fn remove(&self, key: &str) {
        if let Some(file) = self.file(key) {
            if let Err(error) = std::fs::remove_file(&file) {
                tracing::debug!("resolver dir: removing {}: {error}", file.display());
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn file(&self, key: &str) -> Option<PathBuf> {
        super::is_account_key(key).then(|| self.path.join(format!("{key}{EXTENSION}")))
    }

    /// Every stored account's key, in the order of their file names.
    pub fn keys(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return Vec::new();
        };
        let mut keys: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let key = name.strip_suffix(EXTENSION)?;
                (entry.metadata().ok()?.len() > 0).then(|| key.to_string())
            })
            .collect();
        keys.sort();
        keys
    }

    /// The JWT stored for `key`, if any.
    pub fn read(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.file(key)?).ok()
    }

    /// Every stored (key, JWT), at start.
    pub fn load(&self) -> Vec<(String, String)> {
        self.keys()
            .into_iter()
            .filter_map(|key| {
                let jwt = self.read(&key)?;
                if let Some(tracker) = &self.tracker {
                    tracker.track(&key, &jwt, true);
                }
                Some((key, jwt.trim().to_string()))
            })
            .collect()
    }

    /// Store `jwt` for `key` (written beside, then renamed over, so a crash leaves the old JWT
    /// or the new one). `added`: the account is not stored yet, `held`: how many are.
    pub fn save(&self, key: &str, jwt: &str, added: bool, held: usize) -> Result<(), String> {
        let file = self.file(key).ok_or("invalid public key")?;
        if added && !self.cache && self.limit > 0 && held >= self.limit {
            return Err("jwt store is full".into());
        }
        if let Some(evicted) = self
            .tracker
            .as_ref()
            .and_then(|tracker| tracker.make_room(key))
        {
            self.remove(&evicted);
        }
        let temporary = self.path.join(format!(".{key}{EXTENSION}.tmp"));
        std::fs::write(&temporary, jwt)
            .and_then(|()| std::fs::rename(&temporary, &file))
            .map_err(|error| {
                format!("open {}: {}", file.display(), go_compat::errno_text(&error))
            })?;
        if let Some(tracker) = &self.tracker {
            tracker.track(key, jwt, false);
        }
        Ok(())
    }

    /// Delete `key`'s JWT as nats-server does; one not stored is no error.
    pub fn delete(&self, key: &str) -> Result<(), String> {
        if !self.allow_delete {
            return Err("store is not set up to for delete".into());
        }
        let file = self.file(key).ok_or("invalid public key")?;
        if let Some(tracker) = &self.tracker {
            tracker.untrack(key);
        }
        let outcome = if self.hard_delete {
            std::fs::remove_file(&file)
        } else {
            let mut deleted = file.clone().into_os_string();
            deleted.push(".deleted");
            std::fs::rename(&file, deleted)
        };
        match outcome {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(format!(
                "{}: {}",
                file.display(),
                go_compat::errno_text(&error)
            )),
            _ => Ok(()),
        }
    }

    /// nats-server's store hash: the XOR of the SHA-256 of every stored JWT, so two stores
    /// holding the same JWTs compare equal whatever their order.
    pub fn hash(&self) -> [u8; 32] {
        use sha2::Digest;
        let mut hash = [0u8; 32];
        for key in self.keys() {
            let Some(path) = self.file(&key) else {
                continue;
            };
            if let Ok(bytes) = std::fs::read(path) {
                for (byte, digest) in hash.iter_mut().zip(sha2::Sha256::digest(&bytes)) {
                    *byte ^= digest;
                }
            }
        }
        hash
    }

    pub fn allow_delete(&self) -> bool {
        self.allow_delete
    }
}
