//! Small whole files replaced atomically: `[4-byte magic][u32 crc32 of body][body]`, written to a
//! temporary name, fsynced, renamed over the old file, and the directory fsynced. The form of an
//! earlier build's group metadata (`meta`, read once and carried into `meta_record.rs`'s record)
//! and snapshot file (`snapshot_file.rs` reads it once and rewrites it in its own); written only
//! by tests now, to make such directories.

use std::fs;
use std::io;
use std::path::Path;

use bytes::Bytes;

fn checksum(body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(body);
    hasher.finalize()
}

/// Replaces `path` with `body` durably.
#[cfg(test)]
pub(crate) fn write(path: &Path, magic: &[u8; 4], body: &[u8]) -> io::Result<()> {
    use std::fs::File;
    use std::io::Write;
    let temporary = path.with_extension("tmp");
    let mut file = File::create(&temporary)?;
    file.write_all(magic)?;
    file.write_all(&checksum(body).to_le_bytes())?;
    file.write_all(body)?;
    file.sync_all()?;
    fs::rename(&temporary, path)?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// The body of `path`, `None` when there is no such file; an error when it is damaged. The body
/// is the file's contents read once, not copied after the header.
pub(crate) fn read(path: &Path, magic: &[u8; 4]) -> io::Result<Option<Bytes>> {
    let contents = match fs::read(path) {
        Ok(contents) => contents,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let invalid = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    if contents.len() < 8 || &contents[0..4] != magic {
        return Err(invalid("bad header"));
    }
    let mut stored = [0u8; 4];
    stored.copy_from_slice(&contents[4..8]);
    if checksum(&contents[8..]) != u32::from_le_bytes(stored) {
        return Err(invalid("checksum mismatch"));
    }
    Ok(Some(Bytes::from(contents).slice(8..)))
}

/// An `InvalidData` error for a body that does not decode.
pub(crate) fn malformed(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: malformed {what}", path.display()),
    )
}
