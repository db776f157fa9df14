//! Argument groups shared by several subcommands, and their conversion to domain settings.

use crate::keys::parallel::{ChunkSink, par_read, par_read_file};
use crate::keys::{DEFAULT_MAX_LINE, InputFormat, ReadError, ReadOptions, ReadSummary};
use crate::topology::{SlotMap, Topology};
use anyhow::Context as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Line format of key dumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormatArg {
    /// Decide from the first non-blank line.
    Auto,
    /// One key per line, as `redis-cli --scan > file` writes (one trailing CR is stripped).
    Raw,
    /// redis-cli's quoted form: "..." with \\ \" \n \r \t \a \b \xHH escapes.
    Quoted,
    /// key<TAB>bytes[<TAB>ops]; the key raw (no TABs) or quoted.
    Tsv,
}

/// How key dumps are read.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// Line format of the key dumps
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub input_format: InputFormatArg,

    /// Stop with exit status 2 at the first malformed line instead of skipping and counting it
    #[arg(long)]
    pub strict: bool,

    /// Longest line accepted, in bytes; longer lines are skipped and reported as malformed
    #[arg(long, default_value_t = DEFAULT_MAX_LINE, value_name = "BYTES")]
    pub max_line_bytes: usize,
}

impl InputArgs {
    /// The reader settings these flags ask for.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            format: match self.input_format {
                InputFormatArg::Auto => InputFormat::Auto,
                InputFormatArg::Raw => InputFormat::Raw,
                InputFormatArg::Quoted => InputFormat::Quoted,
                InputFormatArg::Tsv => InputFormat::Tsv,
            },
            strict: self.strict,
            max_line_bytes: self.max_line_bytes.max(1),
        }
    }
}

/// Where keys live.
#[derive(Debug, Clone, clap::Args)]
pub struct TopologyArgs {
    /// Place keys on N masters laid out as `redis-cli --cluster create` assigns slots
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=16384))]
    pub masters: Option<u16>,
}

impl TopologyArgs {
    /// The topology asked for, if any.
    pub fn topology(&self) -> anyhow::Result<Option<Topology>> {
        match self.masters {
            None => Ok(None),
            Some(n) => Ok(Some(Topology::Cluster(SlotMap::from_masters(n as usize)?))),
        }
    }
}

/// The name a dump is reported under: its path, or `<stdin>` for `-`.
pub fn input_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// An opened key dump.
pub enum Input {
    /// Standard input.
    Stdin(io::Stdin),
    /// A file (regular files are read through memory maps by the parallel reader).
    File(File),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Stdin(s) => s.read(buf),
            Input::File(f) => f.read(buf),
        }
    }
}

impl Input {
    /// Reads the whole dump on `sinks.len()` threads.
    pub fn par_read<S: ChunkSink>(
        self,
        opts: &ReadOptions,
        sinks: &mut [S],
    ) -> Result<ReadSummary, ReadError> {
        match self {
            Input::Stdin(s) => par_read(s, opts, sinks),
            Input::File(f) => par_read_file(&f, opts, sinks),
        }
    }
}

/// Opens a key dump; `-` is standard input.
pub fn open_input(path: &PathBuf) -> anyhow::Result<Input> {
    if path.as_os_str() == "-" {
        // `keyplan … --keys - < dump` gets the fast file path too.
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            if let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() {
                let f = File::from(fd);
                if f.metadata().is_ok_and(|m| m.is_file()) {
                    return Ok(Input::File(f));
                }
            }
        }
        return Ok(Input::Stdin(io::stdin()));
    }
    if path.is_dir() {
        anyhow::bail!(
            "cannot read key dump '{}': it is a directory; pass a file, or '-' for stdin",
            path.display()
        );
    }
    let f = File::open(path).with_context(|| {
        format!(
            "cannot open key dump '{}' (check the path and its permissions)",
            path.display()
        )
    })?;
    Ok(Input::File(f))
}
