//! A source tree read for keys and batches: each file lowered into the model on its own (in
//! parallel), then the files of one language analysed together by [`super::engine`], so a
//! function of one file called from another is followed into.
//!
//! Nothing here reads files: the caller hands in a way to get each file's text (or why it has
//! none) and the threads to work on.

use super::engine::{self, Found, Source};
use super::ir::Unit;
use super::lua::ScriptFile;
use super::profile::Profile;
use super::{FileFindings, Language};

/// The model of one file's text, or why it is not read.
pub fn lower(language: Language, text: &str) -> Result<Unit, String> {
    match language {
        Language::Python => super::lower::python::lower(text).map_err(|e| e.to_string()),
        Language::Go => super::lower::go::lower(text).map_err(|e| e.to_string()),
        Language::JavaScript(d) => {
            super::lower::javascript::lower(text, d).map_err(|e| e.to_string())
        }
        Language::Ruby => super::lower::ruby::lower(text).map_err(|e| e.to_string()),
        Language::Java => super::lower::java::lower(text).map_err(|e| e.to_string()),
    }
}

/// How far a reading of a tree has got, for a progress bar.
pub trait Steps: Sync {
    /// The steps of the whole reading, once they are known.
    fn total(&self, steps: u64);
    /// `steps` more done.
    fn done(&self, steps: u64);
}

/// No progress shown.
impl Steps for () {
    fn total(&self, _: u64) {}
    fn done(&self, _: u64) {}
}

/// `f` of every item on the threads of `pool`, in the items' order.
pub fn par_map<T: Sync, R: Send>(
    pool: &rayon::ThreadPool,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    use rayon::prelude::*;
    // `f` by reference: a `Sync` closure's reference is `Send`.
    pool.install(|| items.par_iter().map(&f).collect())
}

/// The findings of each of `files` (its name as shown, its language), in their order, or why
/// it was not read. `text_of(i)` gives file `i`'s text; the files of one language are analysed
/// together with that language's `profiles` and the tree's Lua script files (`scripts`). One
/// step of `steps` per file lowered and per function read.
pub fn scan_tree(
    pool: &rayon::ThreadPool,
    files: &[(String, Language)],
    text_of: &(dyn Fn(usize) -> Result<String, String> + Sync),
    scripts: &[ScriptFile],
    profiles: impl Fn(&str) -> Vec<Profile>,
    steps: &dyn Steps,
) -> Vec<Result<FileFindings, String>> {
    let order: Vec<usize> = (0..files.len()).collect();
    // Each file's text is dropped once it is lowered: memory holds the models, not the files.
    let lowered: Vec<Result<Unit, String>> = par_map(pool, &order, |&i| {
        let unit = text_of(i).and_then(|text| lower(files[i].1, &text));
        steps.done(1);
        unit
    });
    let functions: usize = lowered
        .iter()
        .flatten()
        .map(|u| u.funcs.len())
        .sum::<usize>();
    steps.total((files.len() + functions) as u64);
    let mut results: Vec<Option<Result<FileFindings, String>>> = vec![None; files.len()];
    let mut units = Vec::new();
    let mut index = Vec::new();
    for (i, r) in lowered.into_iter().enumerate() {
        match r {
            Ok(u) => {
                units.push((files[i].0.clone(), files[i].1, u));
                index.push(i);
            }
            Err(why) => results[i] = Some(Err(why)),
        }
    }
    let run = |job: &(dyn Fn(usize) -> Found + Sync), n: usize| {
        let idx: Vec<usize> = (0..n).collect();
        par_map(pool, &idx, |&i| {
            let found = job(i);
            steps.done(1);
            found
        })
    };
    let found = analyse(&units, profiles, scripts, &run);
    for (i, f) in index.into_iter().zip(found) {
        results[i] = Some(Ok(f));
    }
    results
        .into_iter()
        .map(|r| r.expect("invariant: every file is lowered or refused"))
        .collect()
}

/// Runs `job(i)` for every `i < n` on the caller's threads; the results in the order of `i`.
pub type Runner<'r> = &'r (dyn Fn(&(dyn Fn(usize) -> Found + Sync), usize) -> Vec<Found> + Sync);

/// The findings of lowered files: `files` are (name as shown, language, model); those of one
/// language (profile language) are analysed together with that language's `profiles` and the
/// tree's Lua script files (`scripts`).
pub fn analyse(
    files: &[(String, Language, Unit)],
    profiles: impl Fn(&str) -> Vec<Profile>,
    scripts: &[ScriptFile],
    run: Runner<'_>,
) -> Vec<FileFindings> {
    let mut out: Vec<FileFindings> = (0..files.len()).map(|_| FileFindings::default()).collect();
    let mut languages: Vec<&str> = files.iter().map(|(_, l, _)| l.profile_language()).collect();
    languages.sort_unstable();
    languages.dedup();
    for lang in languages {
        let index: Vec<usize> = (0..files.len())
            .filter(|&i| files[i].1.profile_language() == lang)
            .collect();
        let sources: Vec<Source<'_>> = index
            .iter()
            .map(|&i| Source {
                file: &files[i].0,
                unit: &files[i].2,
            })
            .collect();
        let found =
            engine::analyse_parallel(&sources, &profiles(lang), scripts, |job, n| run(job, n));
        for (k, f) in index.into_iter().zip(found) {
            out[k] = f;
        }
    }
    out
}

/// The findings of one file's `text` read on its own, on the caller's thread (a rule's
/// example, a test), or why it is not read. The thread needs the stack a reader thread has
/// ([`super::guard::READER_STACK`]) for the deepest trees read.
pub fn scan_one(
    language: Language,
    file: &str,
    text: &str,
    scripts: &[ScriptFile],
) -> Result<FileFindings, String> {
    let unit = lower(language, text)?;
    let sources = [Source { file, unit: &unit }];
    let profiles = Profile::builtin(language.profile_language());
    Ok(engine::analyse(&sources, &profiles, scripts)
        .pop()
        .unwrap_or_default())
}
