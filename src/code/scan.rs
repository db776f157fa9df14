//! A source tree read for keys and batches: each file lowered into the model on its own (in
//! parallel), then the files of one language analysed together by [`super::engine`], so a
//! function of one file called from another is followed into. Files of a language not yet
//! lowered are read by that language's reader ([`super::Readers`]).
//!
//! Nothing here reads files: the caller hands in each file's text (or why it has none) and a
//! way to run work on its threads.

use super::engine::{self, Found, Source};
use super::ir::Unit;
use super::lua::ScriptFile;
use super::profile::Profile;
use super::{FileFindings, Language};

/// Whether `language` is read through the model (lowered, then analysed with the whole tree)
/// rather than by its own reader.
pub fn lowered(language: Language) -> bool {
    matches!(
        language,
        Language::Python | Language::JavaScript(_) | Language::Go | Language::Ruby | Language::Java
    )
}

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
