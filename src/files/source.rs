//! Source trees: the files under the paths given, as ripgrep walks them (`.gitignore`,
//! `.ignore` and global git excludes honoured, hidden files and directories skipped, symlinks
//! not followed), each read whole when it is text of a reasonable size.

use std::path::{Path, PathBuf};

/// Largest source file read (bigger ones are generated or vendored bundles).
pub const MAX_SOURCE_FILE: u64 = 4 << 20;

/// A source file found under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its path relative to the root it was found under (`/` separators), or as given when
    /// the root is the file itself.
    pub shown: String,
}

/// The files under `roots` whose extension is one of `extensions`, in a stable order; what the
/// walk could not enter, with why.
pub fn walk(roots: &[PathBuf], extensions: &[&str]) -> (Vec<SourceFile>, Vec<(String, String)>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for root in roots {
        if root.is_file() {
            files.push(SourceFile {
                path: root.clone(),
                shown: root.to_string_lossy().replace('\\', "/"),
            });
            continue;
        }
        let walker = ignore::WalkBuilder::new(root)
            .follow_links(false)
            .require_git(false)
            .sort_by_file_path(|a, b| a.cmp(b))
            .build();
        for entry in walker {
            match entry {
                Ok(e) => {
                    let p = e.path();
                    if !e.file_type().is_some_and(|t| t.is_file()) {
                        continue;
                    }
                    let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
                    if extensions.contains(&ext) {
                        files.push(SourceFile {
                            path: p.to_path_buf(),
                            shown: relative(root, p),
                        });
                    }
                }
                Err(e) => errors.push((root.to_string_lossy().into_owned(), e.to_string())),
            }
        }
    }
    (files, errors)
}

fn relative(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Why a path given to read source from cannot be read at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RootError {
    /// Nothing there.
    #[error("no such file or directory")]
    Missing,
    /// A symbolic link to nothing.
    #[error("a symbolic link to a path that does not exist")]
    DanglingLink,
    /// A symbolic link that leads back to itself (ELOOP).
    #[error("a symbolic-link loop (ELOOP): its links lead back to themselves, never to a file")]
    LinkLoop,
    /// A device, FIFO or socket.
    #[error("not a regular file or directory (a {0})")]
    Special(&'static str),
    /// Its metadata cannot be read.
    #[error("cannot be read: {0}")]
    Io(String),
}

/// Whether `root` is a regular file or a directory (links followed), which is all a source
/// tree is read from: a device (`/dev/zero`), FIFO or socket would be read forever or as
/// nothing, and a link loop is said as one, not as a missing file.
pub fn check_root(root: &Path) -> Result<(), RootError> {
    let meta = match std::fs::metadata(root) {
        Ok(m) => m,
        Err(e) if is_link_loop(&e) => return Err(RootError::LinkLoop),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let link = std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink());
            return Err(if link {
                RootError::DanglingLink
            } else {
                RootError::Missing
            });
        }
        Err(e) => return Err(RootError::Io(e.to_string())),
    };
    if meta.is_file() || meta.is_dir() {
        return Ok(());
    }
    Err(RootError::Special(special_kind(&meta)))
}

/// Whether an I/O error is ELOOP (too many levels of symbolic links).
fn is_link_loop(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// What a path that is neither a file nor a directory is, in words.
fn special_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    let _ = meta;
    "special file"
}

/// Why a source file is not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SourceSkip {
    /// Over [`MAX_SOURCE_FILE`].
    #[error("larger than {} MiB", MAX_SOURCE_FILE >> 20)]
    TooBig,
    /// Not UTF-8 (or binary).
    #[error("not UTF-8 text")]
    NotText,
    /// It could not be read.
    #[error("cannot be read: {0}")]
    Io(String),
}

/// A source file's text.
pub fn read_source(path: &Path) -> Result<String, SourceSkip> {
    let meta = std::fs::metadata(path).map_err(|e| SourceSkip::Io(e.to_string()))?;
    if meta.len() > MAX_SOURCE_FILE {
        return Err(SourceSkip::TooBig);
    }
    let bytes = std::fs::read(path).map_err(|e| SourceSkip::Io(e.to_string()))?;
    if bytes.contains(&0) {
        return Err(SourceSkip::NotText);
    }
    String::from_utf8(bytes).map_err(|_| SourceSkip::NotText)
}
