//! Where a report goes: standard output, or the `-o` file, written under a temporary name and
//! renamed when complete (a link or a non-regular file is written in place).

use anyhow::Context as _;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Where a report goes: the `-o` file (written under a temporary name, in place only once
/// [`Sink::finish`] is called), or standard output.
pub enum Sink<'a> {
    /// The `-o` file.
    File(AtomicFile),
    /// Standard output.
    Stdout(&'a mut dyn std::io::Write),
}

impl Sink<'_> {
    /// Puts the file in place (or flushes standard output). A sink dropped without this
    /// leaves no file behind.
    pub fn finish(self) -> anyhow::Result<()> {
        match self {
            Sink::File(f) => f.commit(),
            Sink::Stdout(s) => Ok(s.flush()?),
        }
    }
}

impl std::io::Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(f) => f.write(buf),
            Sink::Stdout(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Stdout(s) => s.flush(),
        }
    }
}

/// The sink for `-o PATH` (or standard output without it).
pub fn output_sink<'a>(
    path: Option<&PathBuf>,
    stdout: &'a mut dyn std::io::Write,
) -> anyhow::Result<Sink<'a>> {
    Ok(match path {
        Some(p) => Sink::File(AtomicFile::create(p)?),
        None => Sink::Stdout(stdout),
    })
}

/// A file written under a temporary name beside its destination and renamed onto it by
/// [`AtomicFile::commit`]; dropped without a commit, it is removed. Readers of the destination
/// see the old file or the whole new one, never a part.
pub struct AtomicFile {
    dest: PathBuf,
    out: Target,
}

enum Target {
    /// A temporary file beside the destination, renamed onto it at the commit.
    Temp(std::io::BufWriter<tempfile::NamedTempFile>),
    /// A link or something that is not a regular file (`/dev/stdout`, a FIFO): written in
    /// place.
    Direct(std::io::BufWriter<File>),
}

impl AtomicFile {
    /// Starts writing `dest` (its directory must exist and be writable).
    pub fn create(dest: &Path) -> anyhow::Result<AtomicFile> {
        // A link (`/dev/stdout`) or something that is not a regular file (a FIFO) is written
        // in place: renaming onto it would replace the link or the device.
        let in_place = std::fs::symlink_metadata(dest)
            .is_ok_and(|m| m.file_type().is_symlink() || !(m.is_file() || m.is_dir()));
        if in_place {
            let f =
                File::create(dest).with_context(|| format!("cannot write '{}'", dest.display()))?;
            return Ok(AtomicFile {
                dest: dest.to_path_buf(),
                out: Target::Direct(std::io::BufWriter::new(f)),
            });
        }
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".keyplan-").suffix(".tmp");
        // The finished file gets the usual mode (0666 less the umask), not a temp file's 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder
            .tempfile_in(dir)
            .with_context(|| {
                format!(
                    "cannot write '{}': cannot create a file in '{}' (check that the directory exists and is writable)",
                    dest.display(),
                    dir.display()
                )
            })?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            out: Target::Temp(std::io::BufWriter::new(tmp)),
        })
    }

    /// Flushes the file and renames it onto the destination.
    pub fn commit(self) -> anyhow::Result<()> {
        let dest = self.dest;
        match self.out {
            Target::Direct(mut f) => {
                std::io::Write::flush(&mut f)
                    .with_context(|| format!("writing '{}'", dest.display()))?;
            }
            Target::Temp(f) => {
                let tmp = f
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("writing '{}'", dest.display()))?;
                tmp.persist(&dest)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot write '{}'", dest.display()))?;
            }
        }
        Ok(())
    }
}

impl std::io::Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.out {
            Target::Temp(f) => f.write(buf),
            Target::Direct(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Target::Temp(f) => f.flush(),
            Target::Direct(f) => f.flush(),
        }
    }
}
