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
    /// Its path as the user names it: the root as given joined with the path under it, as
    /// `rg` and `eslint` print them (`src/` gives `src/service.py`, `./src` gives
    /// `src/service.py`, an absolute root stays absolute; `/` separators). CI annotations,
    /// SARIF and GitLab reports find a file by this path from the directory the command ran in.
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
                shown: shown(root),
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
                            shown: shown(p),
                        });
                    }
                }
                Err(e) => errors.push((shown(root), e.to_string())),
            }
        }
    }
    (files, errors)
}

/// A path as reports name it: `/` separators, `.` components and repeated separators dropped
/// (`./src//x.py` → `src/x.py`), `..` and an absolute start kept; `.` for the directory itself.
/// The walk's paths are the root as given joined with the path under it, so this is the path
/// relative to the directory the command runs in whenever the root given was.
pub fn shown(p: &Path) -> String {
    use std::path::Component;
    let mut start = String::new();
    let mut parts: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    for c in p.components() {
        match c {
            Component::Prefix(x) => start.push_str(&x.as_os_str().to_string_lossy()),
            Component::RootDir => start.push('/'),
            Component::CurDir => {}
            Component::ParentDir => parts.push("..".into()),
            Component::Normal(s) => parts.push(s.to_string_lossy()),
        }
    }
    let shown = format!("{start}{}", parts.join("/")).replace('\\', "/");
    if shown.is_empty() { ".".into() } else { shown }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_as_given_and_tidied() {
        for (given, want) in [
            ("src/service.py", "src/service.py"),
            ("./src/x.py", "src/x.py"),
            ("src//a/./b.py", "src/a/b.py"),
            ("../app/x.py", "../app/x.py"),
            ("/srv/app/x.py", "/srv/app/x.py"),
            (".", "."),
            ("./", "."),
            ("x.py", "x.py"),
        ] {
            assert_eq!(shown(Path::new(given)), want, "{given}");
        }
    }

    /// Files under a root are named by the root as given joined with the path under it, so
    /// a report run from a repository root names `src/service.py`, not `service.py`.
    #[test]
    fn walked_files_keep_the_root_given() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        std::fs::write(dir.path().join("src/service.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("src/pkg/a.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("src/notes.txt"), "x\n").unwrap();
        let names = |root: PathBuf| -> Vec<String> {
            let (files, errors) = walk(&[root], &["py"]);
            assert!(errors.is_empty(), "{errors:?}");
            files.into_iter().map(|f| f.shown).collect()
        };
        let abs = dir.path().join("src");
        let abs_shown = shown(&abs);
        assert_eq!(
            names(abs.clone()),
            vec![
                format!("{abs_shown}/pkg/a.py"),
                format!("{abs_shown}/service.py")
            ]
        );
        assert!(abs_shown.starts_with('/') || cfg!(windows), "{abs_shown}");
        // Relative roots, as a command run in `dir` is given them: `src/`, `./src`, `.`.
        // (Joined onto `dir` here, as the process's directory is not changed in a unit test;
        // the joined path is the walk's own, so what `shown` sees past `dir` is the root.)
        let under = |root: &str| -> Vec<String> {
            names(dir.path().join(root))
                .into_iter()
                .map(|s| {
                    s.strip_prefix(&format!("{}/", shown(dir.path())))
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(under("src/"), vec!["src/pkg/a.py", "src/service.py"]);
        assert_eq!(under("./src"), vec!["src/pkg/a.py", "src/service.py"]);
        assert_eq!(under("."), vec!["src/pkg/a.py", "src/service.py"]);
        let file = dir.path().join("./src/service.py");
        let (files, _) = walk(&[file], &["py"]);
        assert_eq!(
            files[0].shown,
            format!("{}/src/service.py", shown(dir.path()))
        );
    }
}
