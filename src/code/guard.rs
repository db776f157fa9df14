//! What keeps one file from taking a whole run down. The readers walk a syntax tree by
//! recursion, so a tree nested deeper than [`MAX_DEPTH`] (generated code: a concatenation of
//! thousands of terms, thousands of nested brackets) is not read; the threads that run the
//! readers are given [`READER_STACK`] bytes of stack, far more than a tree of that depth
//! needs. Two grammars' scanners abort the process (a C assertion) on input of their own:
//! such text is refused before it is parsed.
//!
//! Nothing here reads files or prints.

use tree_sitter::Tree;

/// Deepest syntax tree read (levels of nodes below the root). Real code stays far below: of
/// 8,300 files measured (Python site packages, npm and its dependencies, a web app's
/// `node_modules` with minified bundles and TypeScript declarations, rustdoc's scripts) the
/// deepest, a generated JSON schema validator, is 169 levels deep and most are under 40; an
/// `a + b + …` of n terms is about n levels. Python itself refuses more than 200 nested
/// brackets.
pub const MAX_DEPTH: usize = 1500;

/// Stack of a thread that runs a reader. The readers recurse once per level of the tree, and
/// through up to three functions a pipeline is handed to: the worst shape at [`MAX_DEPTH`]
/// (a Go pipeline handed through functions each nested 500 blocks deep) needs 8 to 12 MiB in
/// an unoptimised build, less in a release one; the unit tests run every shape at the bound
/// on a thread this size. Only the pages touched are backed by memory.
pub const READER_STACK: usize = 64 << 20;

/// Most distinct indentation widths a Python file may have: tree-sitter-python's scanner
/// keeps one entry per open indentation level and aborts the process once they no longer
/// fit in its 1,024-byte state (384 levels inside a string at the least); every open level
/// has a width of its own, so a file with at most this many distinct widths cannot get there.
/// Real files have far fewer (45 at most in Python's standard library).
pub const MAX_PYTHON_INDENT_WIDTHS: usize = 300;

/// Longest Ruby heredoc delimiter (`<<~WORD`), in characters: tree-sitter-ruby's scanner
/// stores its length in one byte and aborts the process (a C assertion) on a longer one.
pub const MAX_HEREDOC_WORD: usize = 255;

/// Why a file's text is not read.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Unreadable {
    /// Its syntax tree is deeper than [`MAX_DEPTH`].
    #[error(
        "nested more than {MAX_DEPTH} levels deep (generated code?): not read, so that it cannot exhaust the stack; the other files are read as usual"
    )]
    TooDeep,
    /// A Python file with more distinct indentation widths than the parser can hold.
    #[error(
        "indented to more than {MAX_PYTHON_INDENT_WIDTHS} different depths, more than the Python parser can hold (Python itself allows 100 levels): not read"
    )]
    PythonIndents,
    /// A Ruby heredoc delimiter longer than the parser can hold.
    #[error(
        "a heredoc delimiter longer than {MAX_HEREDOC_WORD} characters, more than the Ruby parser can hold: not read"
    )]
    HeredocWord,
}

/// Whether `tree` is deeper than [`MAX_DEPTH`], walked with a cursor (no recursion: any depth
/// is measured on any stack); stops at the first node past the bound.
pub fn check_depth(tree: &Tree) -> Result<(), Unreadable> {
    if deeper_than(tree, MAX_DEPTH) {
        Err(Unreadable::TooDeep)
    } else {
        Ok(())
    }
}

/// Whether some node of `tree` is more than `limit` levels below the root.
pub fn deeper_than(tree: &Tree, limit: usize) -> bool {
    depth_capped(tree, limit) > limit
}

/// The depth of `tree` (the root at 0), counted up to `cap + 1`.
fn depth_capped(tree: &Tree, cap: usize) -> usize {
    let mut cursor = tree.walk();
    let (mut depth, mut deepest) = (0usize, 0usize);
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            deepest = deepest.max(depth);
            if deepest > cap {
                return deepest;
            }
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return deepest;
            }
            depth -= 1;
        }
    }
}

/// The depth of `tree` (the root at 0).
pub fn depth(tree: &Tree) -> usize {
    depth_capped(tree, usize::MAX - 1)
}

/// Python text the parser's scanner can hold: at most [`MAX_PYTHON_INDENT_WIDTHS`] distinct
/// indentation widths, each measured as the scanner measures it (a space 1, a tab 8, `\r` and
/// `\f` back to 0, a backslash-newline continuing the count, widths wrapping at 65,536).
pub fn python_indents(text: &str) -> Result<(), Unreadable> {
    // Each line's leading whitespace: its width after its last reset, whether it had a reset,
    // whether it runs on into the next line (a backslash-newline), and whether the line then
    // has something on it (a blank line opens no level).
    struct Lead {
        width: u16,
        reset: bool,
        continues: bool,
        content: bool,
    }
    let b = text.as_bytes();
    let mut leads: Vec<Lead> = Vec::new();
    // Every line start, the first included.
    for s in std::iter::once(0).chain(memchr::memchr_iter(b'\n', b).map(|p| p + 1)) {
        let mut lead = Lead {
            width: 0,
            reset: false,
            continues: false,
            content: false,
        };
        let mut j = s;
        while j < b.len() {
            match b[j] {
                b' ' => lead.width = lead.width.wrapping_add(1),
                b'\t' => lead.width = lead.width.wrapping_add(8),
                b'\r' | b'\x0c' => {
                    lead.width = 0;
                    lead.reset = true;
                }
                b'\n' => break,
                b'\\' => {
                    let mut k = j + 1;
                    if b.get(k) == Some(&b'\r') {
                        k += 1;
                    }
                    lead.continues = b.get(k) == Some(&b'\n');
                    lead.content = !lead.continues;
                    break;
                }
                _ => {
                    lead.content = true;
                    break;
                }
            }
            j += 1;
        }
        leads.push(lead);
    }
    // Widths as the scanner reaches them, last line first: a line that continues adds the
    // next line's width (unless that one reset it).
    let mut seen = vec![0u64; 1 << 10];
    let mut distinct = 0usize;
    let (mut next_width, mut next_reset, mut next_content) = (0u16, false, false);
    for lead in leads.iter().rev() {
        let (width, reset, content) = if lead.continues {
            let w = if next_reset {
                next_width
            } else {
                lead.width.wrapping_add(next_width)
            };
            (w, lead.reset || next_reset, next_content)
        } else {
            (lead.width, lead.reset, lead.content)
        };
        if content && width > 0 {
            let (word, bit) = (usize::from(width) / 64, usize::from(width) % 64);
            if seen[word] & (1 << bit) == 0 {
                seen[word] |= 1 << bit;
                distinct += 1;
                if distinct > MAX_PYTHON_INDENT_WIDTHS {
                    return Err(Unreadable::PythonIndents);
                }
            }
        }
        (next_width, next_reset, next_content) = (width, reset, content);
    }
    Ok(())
}

/// Ruby text whose heredoc delimiters the parser's scanner can hold: none longer than
/// [`MAX_HEREDOC_WORD`] characters. Every `<<` is taken as a heredoc's start, as the scanner
/// may take it: then a `~` or `-`, then a quoted word (to the same quote, across lines) or a
/// run of letters, digits, `_` and other than ASCII characters.
pub fn ruby_heredocs(text: &str) -> Result<(), Unreadable> {
    let b = text.as_bytes();
    for at in memchr::memmem::find_iter(b, b"<<") {
        let mut rest = &text[at + 2..];
        if let Some(r) = rest.strip_prefix(['~', '-']) {
            rest = r;
        }
        let mut chars = rest.chars();
        let long = match chars.next() {
            Some(q @ ('\'' | '"' | '`')) => chars.take_while(|&c| c != q).nth(MAX_HEREDOC_WORD),
            Some(c) if c.is_alphanumeric() || c == '_' || !c.is_ascii() => rest
                .chars()
                .take_while(|&c| c.is_alphanumeric() || c == '_' || !c.is_ascii())
                .nth(MAX_HEREDOC_WORD),
            _ => None,
        };
        if long.is_some() {
            return Err(Unreadable::HeredocWord);
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::code::Language;
    use crate::code::scan::scan_one;

    /// Source nested `n` levels deep in one of the shapes generated code takes, in the
    /// language of extension `ext`; each ends in a multi-key call the reader must get to.
    pub(crate) fn nested(ext: &str, shape: &str, n: usize) -> String {
        let r = |s: &str, n: usize| s.repeat(n);
        let terms = |t: &str| vec![t; n.max(1)].join(" + ");
        match (ext, shape) {
            ("py", "blocks") => {
                let mut s = String::new();
                for i in 0..n {
                    s += &format!("{}if x:\n", " ".repeat(i));
                }
                s + &" ".repeat(n) + "r.mget('a', 'b')\n"
            }
            ("py", "calls") => format!("k = {}'k'{}\nr.mget(k, 'b')\n", r("f(", n), r(")", n)),
            ("py", "lists") => format!("k = {}'k'{}\nr.mget(k, 'b')\n", r("[", n), r("]", n)),
            ("py", "parens") => format!("k = {}'k'{}\nr.mget(k, 'b')\n", r("(", n), r(")", n)),
            ("py", "concat") => format!("k = {}\nr.mget(k, k + 'x')\n", terms("'k'")),
            ("py", "lambdas") => format!("k = {}'k'\nr.mget(k, 'b')\n", r("lambda: ", n)),
            ("py", "fstrings") => {
                format!("k = {}1{}\nr.mget(k, 'b')\n", r("f'{", n), r("}'", n))
            }
            ("py", "helper") => format!(
                "def key(u):\n    return {}\n\nk = {}\nr.mget(key(k), key('x') + k)\n",
                terms("'k:' + u"),
                terms("'a'")
            ),
            ("py", "pipeline") => format!(
                "def save(pipe, u):\n    pipe.set({}, 1)\n    pipe.set('b', 2)\n\np = r.pipeline()\nsave(p, 'u')\np.execute()\n",
                terms("'k:' + u")
            ),
            ("js" | "ts", "blocks") => format!("{}r.mget('a', 'b');{}\n", r("{", n), r("}", n)),
            ("js" | "ts", "ifs") => {
                format!("{}r.mget('a', 'b');{}\n", r("if (x) {", n), r("}", n))
            }
            ("js" | "ts", "calls") => {
                format!(
                    "const k = {}'k'{};\nr.mget(k, 'b');\n",
                    r("f(", n),
                    r(")", n)
                )
            }
            ("js" | "ts", "lists") => {
                format!(
                    "const k = {}'k'{};\nr.mget(k, 'b');\n",
                    r("[", n),
                    r("]", n)
                )
            }
            ("js" | "ts", "parens") => {
                format!(
                    "const k = {}'k'{};\nr.mget(k, 'b');\n",
                    r("(", n),
                    r(")", n)
                )
            }
            ("js" | "ts", "concat") => {
                format!("const k = {};\nr.mget(k, k + 'x');\n", terms("'k'"))
            }
            ("js" | "ts", "closures") => {
                format!("const k = {}'k';\nr.mget(k, 'b');\n", r("() => ", n))
            }
            ("js" | "ts", "functions") => format!(
                "const k = {}r.mget('a', 'b'){};\n",
                r("function () { return ", n),
                r("; }", n)
            ),
            ("js" | "ts", "templates") => {
                format!(
                    "const k = {}1{};\nr.mget(k, 'b');\n",
                    r("`${", n),
                    r("}`", n)
                )
            }
            ("js" | "ts", "chain") => {
                format!("const k = r{};\nr.mget(k, 'b');\n", r(".get('k')", n))
            }
            ("js" | "ts", "follow") => {
                let mut s = String::new();
                for i in (0..FOLLOWED).rev() {
                    let next = if i + 1 < FOLLOWED {
                        format!(" f{}(p);", i + 1)
                    } else {
                        String::new()
                    };
                    s += &format!(
                        "function f{i}(p) {{ {}p.set('k{i}', 1);{next}{} }}\n",
                        r("{", n),
                        r("}", n)
                    );
                }
                s + "const p = r.pipeline();\nf0(p);\np.exec();\n"
            }
            ("js" | "ts", "helper") => format!(
                "function key(u) {{ return {}; }}\nconst k = {};\nr.mget(key(k), key('x') + k);\n",
                terms("'k:' + u"),
                terms("'a'")
            ),
            ("go", _) => {
                let body = match shape {
                    "blocks" => format!("{}r.MGet(ctx, \"a\", \"b\")\n{}", r("{", n), r("}", n)),
                    "ifs" => format!(
                        "{}r.MGet(ctx, \"a\", \"b\")\n{}",
                        r("if x {\n", n),
                        r("}\n", n)
                    ),
                    "calls" => format!(
                        "k := {}\"k\"{}\nr.MGet(ctx, k, \"b\")",
                        r("f(", n),
                        r(")", n)
                    ),
                    "parens" => {
                        format!(
                            "k := {}\"k\"{}\nr.MGet(ctx, k, \"b\")",
                            r("(", n),
                            r(")", n)
                        )
                    }
                    "lists" => {
                        format!(
                            "k := {}\"k\"{}\nr.MGet(ctx, k, \"b\")",
                            r("[]any{", n),
                            r("}", n)
                        )
                    }
                    "concat" => format!("k := {}\nr.MGet(ctx, k, k + \"x\")", terms("\"k\"")),
                    "closures" => format!(
                        "k := {}\"k\"{}\nr.MGet(ctx, k, \"b\")",
                        r("func() any { return ", n),
                        r(" }", n)
                    ),
                    "follow" => {
                        let mut s = String::from("package main\n\n");
                        for i in (0..FOLLOWED).rev() {
                            let next = if i + 1 < FOLLOWED {
                                format!("f{}(p)\n", i + 1)
                            } else {
                                String::new()
                            };
                            s += &format!(
                                "func f{i}(p redis.Pipeliner) {{\n{}p.Set(ctx, \"k{i}\", 1, 0)\n{next}{}}}\n\n",
                                r("if x {\n", n),
                                r("}\n", n)
                            );
                        }
                        return s + "func main() {\np := rdb.Pipeline()\nf0(p)\np.Exec(ctx)\n}\n";
                    }
                    "helper" => {
                        return format!(
                            "package main\n\nfunc key(u string) string {{ return {} }}\n\nfunc main() {{\nk := {}\nr.MGet(ctx, key(k), key(\"x\") + k)\n}}\n",
                            terms("\"k:\" + u"),
                            terms("\"a\"")
                        );
                    }
                    _ => unreachable!("no Go shape {shape}"),
                };
                format!("package main\n\nfunc main() {{\n{body}\n}}\n")
            }
            ("rb", "blocks") => format!("{}r.mget('a', 'b')\n{}", r("if x\n", n), r("end\n", n)),
            ("rb", "begins") => {
                format!("{}r.mget('a', 'b')\n{}", r("begin\n", n), r("end\n", n))
            }
            ("rb", "calls") => format!("k = {}'k'{}\nr.mget(k, 'b')\n", r("f(", n), r(")", n)),
            ("rb", "lists") => format!("k = {}'k'{}\nr.mget(k, 'b')\n", r("[", n), r("]", n)),
            ("rb", "parens") => format!("k = {}'k'{}\nr.mget(k, 'b')\n", r("(", n), r(")", n)),
            ("rb", "concat") => format!("k = {}\nr.mget(k, k + 'x')\n", terms("'k'")),
            ("rb", "closures") => {
                format!("k = {}'k'{}\nr.mget(k, 'b')\n", r("-> { ", n), r(" }", n))
            }
            ("rb", "interpolation") => {
                format!("k = {}1{}\nr.mget(k, 'b')\n", r("\"#{", n), r("}\"", n))
            }
            ("rb", "follow") => {
                let mut s = String::new();
                for i in (0..FOLLOWED).rev() {
                    let next = if i + 1 < FOLLOWED {
                        format!("f{}(p)\n", i + 1)
                    } else {
                        String::new()
                    };
                    s += &format!(
                        "def f{i}(p)\n{}p.set('k{i}', 1)\n{next}{}end\n",
                        r("if x\n", n),
                        r("end\n", n)
                    );
                }
                s + "r.pipelined do |p|\n  f0(p)\nend\n"
            }
            ("rb", "helper") => format!(
                "def key(u)\n  {}\nend\nk = {}\nr.mget(key(k), key('x') + k)\n",
                terms("'k:' + u"),
                terms("'a'")
            ),
            ("java", _) => {
                let body = match shape {
                    "blocks" => format!("{}r.mget(\"a\", \"b\");{}", r("{", n), r("}", n)),
                    "ifs" => format!("{}r.mget(\"a\", \"b\");{}", r("if (x) {", n), r("}", n)),
                    "calls" => format!(
                        "String k = {}\"k\"{};\nr.mget(k, \"b\");",
                        r("f(", n),
                        r(")", n)
                    ),
                    "parens" => format!(
                        "String k = {}\"k\"{};\nr.mget(k, \"b\");",
                        r("(", n),
                        r(")", n)
                    ),
                    "lists" => format!(
                        "Object[] k = {}\"k\"{};\nr.mget(\"a\", \"b\");",
                        r("{", n),
                        r("}", n)
                    ),
                    "concat" => format!("String k = {};\nr.mget(k, k + \"x\");", terms("\"k\"")),
                    "closures" => {
                        format!("Object k = {}\"k\";\nr.mget(\"a\", \"b\");", r("() -> ", n))
                    }
                    "chain" => format!(
                        "Object k = r{};\nr.mget(\"a\", \"b\");",
                        r(".get(\"k\")", n)
                    ),
                    "helper" => {
                        return format!(
                            "class A {{\n String key(String u) {{ return {}; }}\n void m() {{\n String k = {};\n r.mget(key(k), key(\"x\") + k);\n }}\n}}\n",
                            terms("\"k:\" + u"),
                            terms("\"a\"")
                        );
                    }
                    _ => unreachable!("no Java shape {shape}"),
                };
                format!("class A {{\n void m() {{\n{body}\n }}\n}}\n")
            }
            _ => unreachable!("no shape {shape} in .{ext}"),
        }
    }

    /// How many functions the `follow` shape hands a pipeline on through, each nested `n`
    /// deep: more than the readers follow.
    const FOLLOWED: usize = 6;

    /// Every shape, by extension.
    pub(crate) const SHAPES: &[(&str, &[&str])] = &[
        (
            "py",
            &[
                "blocks", "calls", "lists", "parens", "concat", "lambdas", "fstrings", "helper",
                "pipeline",
            ],
        ),
        (
            "js",
            &[
                "blocks",
                "ifs",
                "calls",
                "lists",
                "parens",
                "concat",
                "closures",
                "functions",
                "templates",
                "chain",
                "helper",
                "follow",
            ],
        ),
        (
            "ts",
            &[
                "blocks",
                "ifs",
                "calls",
                "lists",
                "parens",
                "concat",
                "closures",
                "functions",
                "templates",
                "chain",
                "helper",
                "follow",
            ],
        ),
        (
            "go",
            &[
                "blocks", "ifs", "calls", "parens", "lists", "concat", "closures", "helper",
                "follow",
            ],
        ),
        (
            "rb",
            &[
                "blocks",
                "begins",
                "calls",
                "lists",
                "parens",
                "concat",
                "closures",
                "interpolation",
                "helper",
                "follow",
            ],
        ),
        (
            "java",
            &[
                "blocks", "ifs", "calls", "parens", "lists", "concat", "closures", "chain",
                "helper",
            ],
        ),
    ];

    /// The syntax tree of `text` (`None` when the text is refused before it is parsed).
    fn tree_of(language: Language, text: &str) -> Option<Tree> {
        use crate::code::lower::javascript::Dialect;
        let grammar: tree_sitter::Language = match language {
            Language::Python => {
                python_indents(text).ok()?;
                tree_sitter_python::LANGUAGE.into()
            }
            Language::JavaScript(Dialect::JavaScript) => tree_sitter_javascript::LANGUAGE.into(),
            Language::JavaScript(Dialect::TypeScript) => {
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
            }
            Language::JavaScript(Dialect::Tsx) => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Ruby => {
                ruby_heredocs(text).ok()?;
                tree_sitter_ruby::LANGUAGE.into()
            }
            Language::Java => tree_sitter_java::LANGUAGE.into(),
        };
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&grammar).unwrap();
        parser.parse(text, None)
    }

    /// Whether the reader of `language` would read `text` (refused neither before parsing nor
    /// for its depth).
    fn read(language: Language, text: &str) -> bool {
        tree_of(language, text).is_some_and(|t| !deeper_than(&t, MAX_DEPTH))
    }

    /// The most levels of `shape` a reader still reads.
    fn deepest_read(ext: &str, shape: &str) -> usize {
        let language = Language::of_extension(ext).unwrap();
        let (mut lo, mut hi) = (1, 2 * MAX_DEPTH);
        assert!(read(language, &nested(ext, shape, lo)), "{shape}.{ext}");
        assert!(!read(language, &nested(ext, shape, hi)), "{shape}.{ext}");
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if read(language, &nested(ext, shape, mid)) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// What `keyplan code` makes of `text` (lowered, then read), on a thread with `stack` bytes
    /// of stack, as `keyplan code` runs it.
    fn read_on_stack(
        stack: usize,
        language: Language,
        text: String,
    ) -> Result<Vec<(String, usize)>, String> {
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || {
                scan_one(language, "m", &text, &[])
                    .map(|f| f.sites.into_iter().map(|s| (s.op, s.keys.len())).collect())
            })
            .unwrap()
            .join()
            .unwrap()
    }

    /// The proof that the bound and the stack go together: every shape, in every language, at
    /// the deepest nesting still read, is read on a thread of [`READER_STACK`] (the tests run
    /// unoptimised code, whose frames are larger than a release build's).
    /// `KEYPLAN_TEST_READER_STACK=<bytes>` runs them on another size, to measure what they
    /// need.
    #[test]
    fn the_deepest_trees_read_fit_the_readers_stack() {
        let stack = std::env::var("KEYPLAN_TEST_READER_STACK")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(READER_STACK);
        let mut missing = Vec::new();
        for (ext, shapes) in SHAPES {
            let language = Language::of_extension(ext).unwrap();
            for shape in *shapes {
                let n = deepest_read(ext, shape);
                let text = nested(ext, shape, n);
                let got = read_on_stack(stack, language, text);
                let sites = got.unwrap_or_else(|e| panic!("{shape}.{ext} at {n} levels: {e}"));
                // The call at the bottom is still found (nested f-strings of one quote are
                // not Python the grammar reads: it recovers, without the call; a list of lists
                // of a key is no key: clients flatten one level; a call in a function nested
                // in hundreds of functions never called is past the steps a reading takes).
                if !matches!(
                    (*ext, *shape),
                    ("py", "fstrings") | (_, "lists") | ("js" | "ts", "functions")
                ) && sites.is_empty()
                {
                    missing.push(format!("{shape}.{ext} at {n} levels"));
                }
                if *shape == "follow" {
                    assert!(sites[0].0.starts_with("SET SET SET"), "{sites:?}");
                }
            }
        }
        assert!(missing.is_empty(), "no site found: {missing:?}");
    }

    /// Past the bound every shape is refused, by a walk that does not recurse: the lowerings
    /// are called here on the test's own thread (2 MiB of stack), ten times the bound deep.
    #[test]
    fn deeper_trees_are_refused_on_any_stack() {
        for (ext, shapes) in SHAPES {
            let language = Language::of_extension(ext).unwrap();
            for shape in *shapes {
                // Python's blocks are one space deeper each: 400 is past what its scanner holds.
                let n = if (*ext, *shape) == ("py", "blocks") {
                    400
                } else {
                    10 * MAX_DEPTH
                };
                let text = nested(ext, shape, n);
                let why = match language {
                    Language::Python if *shape == "blocks" => Unreadable::PythonIndents,
                    _ => Unreadable::TooDeep,
                };
                assert_eq!(
                    scan_one(language, "m", &text, &[]),
                    Err(why.to_string()),
                    "{shape}.{ext}"
                );
            }
        }
    }

    #[test]
    fn depth_counts_levels_below_the_root() {
        let tree = tree_of(Language::Python, "x = 1\n").unwrap();
        // module > expression_statement > assignment > integer
        assert_eq!(depth(&tree), 3);
        assert!(deeper_than(&tree, 2));
        assert!(!deeper_than(&tree, 3));
        let deep = tree_of(Language::Python, &nested("py", "parens", 3000)).unwrap();
        assert!(depth(&deep) > 3000);
        assert!(check_depth(&deep).is_err());
    }

    /// 600 nested blocks with a string inside aborted the process in tree-sitter-python's
    /// scanner (`Assertion 'length <= 1024'`); such text is refused before it is parsed.
    #[test]
    fn python_too_deeply_indented_for_its_scanner_is_refused_unparsed() {
        let text = nested("py", "blocks", 600);
        assert_eq!(python_indents(&text), Err(Unreadable::PythonIndents));
        assert_eq!(
            scan_one(Language::Python, "m", &text, &[]),
            Err(Unreadable::PythonIndents.to_string())
        );
        // One width per level: as many as allowed are read.
        assert_eq!(
            python_indents(&nested("py", "blocks", MAX_PYTHON_INDENT_WIDTHS)),
            Ok(())
        );
        assert!(python_indents(&nested("py", "blocks", MAX_PYTHON_INDENT_WIDTHS + 1)).is_err());
    }

    /// Widths as the scanner measures them: a tab is 8, `\f` starts again at 0, a backslash
    /// at the end of a line carries the count on to the next line, blank lines count for
    /// nothing, and a width repeated counts once.
    #[test]
    fn python_indent_widths_are_the_scanners() {
        let widths = |text: &str| {
            // The number of distinct widths, found as the most allowed before a refusal.
            let mut lines = String::new();
            for i in 1..=MAX_PYTHON_INDENT_WIDTHS {
                lines += &format!("{}x\n", " ".repeat(1000 + i));
            }
            // `lines` has exactly the limit: one more width in `text` tips it over.
            python_indents(&(lines + text)).is_err()
        };
        assert!(widths("\tx\n"));
        assert!(!widths("\n\n   \n"));
        assert!(!widths("\x0c\x0cx\n"));
        // The same width as one already seen.
        assert!(!widths(&format!("{}y\n", " ".repeat(1001))));
        // Carried over a backslash-newline: 1 + 1001 = 1002, seen already (as is 1001, the
        // next line's own); 300 + 1001 is not.
        assert!(!widths(&format!(" \\\n{}x\n", " ".repeat(1001))));
        assert!(widths(&format!(
            "{}\\\n{}x\n",
            " ".repeat(300),
            " ".repeat(1001)
        )));
        // A backslash elsewhere on a line ends its indentation.
        assert!(widths("  \\x\n"));
    }

    /// A heredoc delimiter of more than 255 characters aborted the process in
    /// tree-sitter-ruby's scanner (`Assertion 'size == length'`); quoted, dashed, squiggly or
    /// not ASCII, such text is refused before it is parsed.
    #[test]
    fn ruby_heredoc_delimiters_the_scanner_cannot_hold_are_refused_unparsed() {
        let doc = |open: &str, word: &str| format!("k = <<{open}\n  x\n{word}\nr.mget('a', 'b')\n");
        let long = "A".repeat(MAX_HEREDOC_WORD + 1);
        for text in [
            doc(&long, &long),
            doc(&format!("~{long}"), &long),
            doc(&format!("-{long}"), &long),
            doc(&format!("~'{}'", "a b".repeat(90)), &"a b".repeat(90)),
            doc(&"é".repeat(256), &"é".repeat(256)),
        ] {
            assert_eq!(ruby_heredocs(&text), Err(Unreadable::HeredocWord));
            assert_eq!(
                scan_one(Language::Ruby, "m", &text, &[]),
                Err(Unreadable::HeredocWord.to_string())
            );
        }
        let ok = "A".repeat(MAX_HEREDOC_WORD);
        let text = doc(&format!("~{ok}"), &ok);
        assert_eq!(ruby_heredocs(&text), Ok(()));
        let found = scan_one(Language::Ruby, "m", &text, &[]).unwrap();
        assert_eq!(found.sites.len(), 1);
        // A shift is not a heredoc, whatever follows it.
        assert_eq!(ruby_heredocs(&format!("a << {long}\nx <<= 1\n")), Ok(()));
    }
}
