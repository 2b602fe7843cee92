//! docs/adding-a-workflow.md shows real code: every fenced block marked `<!-- from PATH -->` must
//! appear verbatim (as consecutive lines) in that file of the repository, and every Rust or TOML
//! block of the guide must carry such a mark. So the guide's example is the code of
//! `workflows/example-echo` (and the registry), which `tests/example_workflow.rs` builds and runs
//! end to end: a change to that code that the guide does not follow fails here.

use std::path::Path;

const GUIDE: &str = "docs/adding-a-workflow.md";

/// One fenced block of the guide: its language, its source mark (if any), its first line number
/// and its text.
#[derive(Debug)]
struct Block {
    lang: String,
    from: Option<String>,
    line: usize,
    text: String,
}

/// The fenced blocks of `markdown`, each with the `<!-- from PATH -->` mark on the line before
/// its fence, if there is one.
fn blocks(markdown: &str) -> Vec<Block> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let from = i
            .checked_sub(1)
            .and_then(|j| lines[j].trim().strip_prefix("<!-- from "))
            .and_then(|rest| rest.strip_suffix("-->"))
            .map(|path| path.trim().to_string());
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].starts_with("```") {
            end += 1;
        }
        out.push(Block {
            lang: lang.trim().to_string(),
            from,
            line: start + 1,
            text: lines[start..end.min(lines.len())].join("\n"),
        });
        i = end + 1;
    }
    out
}

/// Where `block` is not a run of consecutive lines of `source`: `None` when it is.
fn not_found_in(block: &str, source: &str) -> Option<String> {
    let want: Vec<&str> = block.lines().collect();
    let have: Vec<&str> = source.lines().collect();
    if want.is_empty() {
        return Some("the block is empty".into());
    }
    let found = have.windows(want.len()).any(|w| w == want.as_slice());
    (!found).then(|| {
        // Name the first line of the block that the source does not hold at all, if any.
        match want.iter().find(|l| !have.contains(l)) {
            Some(line) => format!("the source has no line {line:?}"),
            None => "its lines are in the source, but not together in this order".into(),
        }
    })
}

/// The problems of the guide `markdown` against the files under `root`.
fn problems(markdown: &str, root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for b in blocks(markdown) {
        let code = matches!(b.lang.as_str(), "rust" | "toml");
        match &b.from {
            None if code => found.push(format!(
                "{GUIDE}:{}: a {} block without a `<!-- from PATH -->` mark",
                b.line, b.lang
            )),
            None => {}
            Some(path) => match std::fs::read_to_string(root.join(path)) {
                Err(e) => found.push(format!("{GUIDE}:{}: {path}: {e}", b.line)),
                Ok(source) => {
                    if let Some(why) = not_found_in(&b.text, &source) {
                        found.push(format!("{GUIDE}:{}: not in {path}: {why}", b.line));
                    }
                }
            },
        }
    }
    found
}

#[test]
fn the_guides_code_blocks_are_the_example_workflows_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide =
        std::fs::read_to_string(root.join(GUIDE)).unwrap_or_else(|e| panic!("{GUIDE}: {e}"));
    let marked: Vec<String> = blocks(&guide).into_iter().filter_map(|b| b.from).collect();
    // The guide quotes the example's manifest, its plan and its request source, and the registry.
    for path in [
        "workflows/example-echo/Cargo.toml",
        "workflows/example-echo/src/lib.rs",
        "src/registry.rs",
    ] {
        assert!(
            marked.iter().any(|m| m == path),
            "{GUIDE} quotes nothing from {path}: {marked:?}"
        );
    }
    let found = problems(&guide, root);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_block_that_left_its_source_or_lost_its_mark_is_named() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Lines 1–2 of the registry together pass; a changed line, reordered lines, a missing file
    // and an unmarked Rust block are each named with the guide's line.
    let doc = "<!-- from src/registry.rs -->\n```rust\n//! The workflow registry: the one place \
               that names every workflow this build ships.\n\nuse openbench_common::workflow::\
               Workflow;\n```\n\n<!-- from src/registry.rs -->\n```rust\nuse openbench_common::\
               workflow::Workflows;\n```\n\n<!-- from src/registry.rs -->\n```rust\nuse \
               openbench_common::workflow::Workflow;\n\n```\n\n<!-- from src/nowhere.rs -->\n\
               ```toml\n[dependencies]\n```\n\n```rust\nfn unmarked() {}\n```\n";
    let found = problems(doc, root);
    assert_eq!(
        found,
        [
            "docs/adding-a-workflow.md:10: not in src/registry.rs: the source has no line \
             \"use openbench_common::workflow::Workflows;\"",
            "docs/adding-a-workflow.md:21: src/nowhere.rs: No such file or directory (os error 2)",
            "docs/adding-a-workflow.md:25: a rust block without a `<!-- from PATH -->` mark",
        ],
        "{found:#?}"
    );
}
