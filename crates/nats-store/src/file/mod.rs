//! FileStore (work in progress).
