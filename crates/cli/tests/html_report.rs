//! `pathprof html` on a profile of a C fixture that `pathprof run` writes:
//! the files it writes, its errors, and what Debian's headless Chromium
//! shows of the pages (the functions on the index; on a function page, the
//! lines of the path the URL fragment names), checked against what the
//! test derives from the profile itself.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::bin::{pathprof, stderr};
use common::programs::root;
use pathprof_graph::interproc::PathStep;
use pathprof_profile::interproc::InterprocProfile;
use pathprof_profile::{FunctionData, Profile};

/// The reader of the pages that pathprof-core's own HTML tests use.
#[path = "../../core/src/html/tests/scrape.rs"]
mod scrape;
use scrape::attrs;

/// A path profile of `sort.O0 -q 5 3 9 -1 7`, written by `pathprof run`
/// into `dir`.
fn sort_profile(dir: &Path) -> PathBuf {
    profile_of(dir, "sort", &[], &["-q", "5", "3", "9", "-1", "7"])
}

/// `pathprof run MODE_ARGS sort.O0.wasm -o dir/NAME.profile -- ARGS`.
fn profile_of(dir: &Path, name: &str, mode_args: &[&str], args: &[&str]) -> PathBuf {
    let wasm = root().join("tests/fixtures/c/build/sort.O0.wasm");
    assert!(wasm.is_file(), "run scripts/build-c-fixtures.sh first");
    let profile = dir.join(format!("{name}.profile"));
    let mut argv = vec!["run"];
    argv.extend_from_slice(mode_args);
    argv.extend([
        wasm.to_str().unwrap(),
        "-o",
        profile.to_str().unwrap(),
        "--",
    ]);
    argv.extend_from_slice(args);
    let o = pathprof(&argv);
    assert!(o.status.success(), "{}", stderr(&o));
    profile
}

fn html(profile: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "html",
        profile.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    pathprof(&args)
}

fn sources() -> String {
    root().join("tests/fixtures/c").display().to_string()
}

/// Per function that ran, its path executions: the counts of its paths
/// and of its self loops' iterations.
fn flows(p: &Profile) -> Vec<(String, u32, u64)> {
    let mut out: Vec<(String, u32, u64)> = p
        .functions
        .iter()
        .map(|f| {
            let FunctionData::Path { counts, .. } = &f.data else {
                panic!("a path profile")
            };
            let flow = counts.paths.iter().map(|&(_, c)| c).sum::<u64>()
                + counts.self_loops.iter().sum::<u64>();
            (f.display_name(), f.func_index, flow)
        })
        .collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
    out
}

/// The names of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The report of [`sort_profile`] in `dir/report`, with the sources, and
/// the profile.
fn report_of_sort(dir: &Path) -> (Profile, PathBuf) {
    let profile = sort_profile(dir);
    let out = dir.join("report");
    let o = html(&profile, &out, &["--source-dir", &sources()]);
    assert!(o.status.success(), "{}", stderr(&o));
    (Profile::read(&profile).unwrap(), out)
}

#[test]
fn html_writes_an_index_and_a_page_per_function_that_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, out) = report_of_sort(tmp.path());
    let mut want: Vec<String> = flows(&p)
        .iter()
        .filter(|f| f.2 > 0)
        .map(|f| format!("f{}.html", f.1))
        .collect();
    want.push("index.html".into());
    want.sort();
    assert!(want.len() > 5, "{want:?}");
    assert_eq!(listing(&out), want);
    // Nothing left beside it.
    assert_eq!(listing(tmp.path()), ["report", "sort.profile"]);
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(!index.contains("src=\"http") && !index.contains("href=\"http"));
}

#[test]
fn html_refuses_an_existing_folder_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = sort_profile(tmp.path());
    let out = tmp.path().join("report");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("mine.txt"), "keep").unwrap();
    let o = html(&profile, &out, &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&out.display().to_string()) && err.contains("--force"),
        "{err}"
    );
    assert_eq!(listing(&out), ["mine.txt"]);
    assert_eq!(listing(tmp.path()), ["report", "sort.profile"]);
    let o = html(&profile, &out, &["--force", "--source-dir", &sources()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!out.join("mine.txt").exists() && out.join("index.html").is_file());
    assert_eq!(listing(tmp.path()), ["report", "sort.profile"]);
}

#[test]
fn html_names_a_corrupted_profile_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = sort_profile(tmp.path());
    let bytes = std::fs::read(&profile).unwrap();
    let bad = tmp.path().join("bad.profile");
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let out = tmp.path().join("report");
    let o = html(&bad, &out, &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.profile"), "{err}");
    assert_eq!(listing(tmp.path()), ["bad.profile", "sort.profile"]);
    // A folder that cannot be created is named.
    let out = tmp.path().join("no/such/report");
    let o = html(&profile, &out, &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&out.display().to_string()), "{err}");
    assert_eq!(listing(tmp.path()), ["bad.profile", "sort.profile"]);
}

#[test]
fn html_notes_a_missing_source_file_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = sort_profile(tmp.path());
    // As if the program had been built in a folder that is gone.
    let moved = tmp.path().join("moved/sort.c");
    let mut p = Profile::read(&profile).unwrap();
    for b in p
        .functions
        .iter_mut()
        .flat_map(|f| f.blocks.iter_mut().flatten())
    {
        if let Some(src) = b.source.as_mut().filter(|s| s.file.ends_with("/sort.c")) {
            src.file = moved.display().to_string();
        }
    }
    p.write(&profile).unwrap();
    let out = tmp.path().join("report");
    let o = html(
        &profile,
        &out,
        &["--source-dir", &tmp.path().display().to_string()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let notes: Vec<String> = stderr(&o)
        .lines()
        .filter(|l| l.contains("not found"))
        .map(String::from)
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("sort.c"), "{notes:?}");
    let p = Profile::read(&profile).unwrap();
    let main = p
        .functions
        .iter()
        .find(|f| f.display_name() == "main")
        .unwrap();
    let page = std::fs::read_to_string(out.join(format!("f{}.html", main.func_index))).unwrap();
    let note = format!("source file {} not found", moved.display());
    assert!(page.contains(&note), "{note}");
    // A folder that has a file of that name: found by its last component.
    let fixtures = root().join("tests/fixtures/c");
    let o = html(
        &profile,
        &out,
        &["--force", "--source-dir", &fixtures.display().to_string()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("sort.c"), "{}", stderr(&o));
}

/// The path's blocks' lines as the test reads them from the profile: per
/// `file:line` (the whole path, as pages head a listing), the 1-based positions along the path of its blocks there.
fn path_lines(p: &Profile, function: u32, path: u64) -> BTreeMap<String, String> {
    let f = p.function(function).unwrap();
    let FunctionData::Path { numbered, .. } = &f.data else {
        panic!("a path profile")
    };
    let (dag, numbering) = numbered.to_dag();
    let regen = numbered
        .regenerate(&dag, &numbering, path, |e| {
            f.edges[e.index()].kind == "Catch"
        })
        .unwrap();
    let mut at: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, b) in regen.blocks.iter().enumerate() {
        let src = f.blocks[b.index()].as_ref().and_then(|b| b.source.clone());
        if let Some(src) = src.filter(|s| s.line > 0) {
            let key = format!("{}:{}", src.file, src.line);
            at.entry(key).or_default().push((i + 1).to_string());
        }
    }
    at.into_iter().map(|(k, v)| (k, v.join(","))).collect()
}

/// The page as headless Chromium leaves it after its scripts ran; fails
/// on any console message (the pages log none).
fn rendered(page: &Path, fragment: &str) -> String {
    let chromium = Path::new("/usr/bin/chromium");
    assert!(
        chromium.is_file(),
        "{}: no chromium; run scripts/setup.sh, which installs it",
        chromium.display()
    );
    let profile_dir = tempfile::tempdir().unwrap();
    let o = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile_dir.path().display()))
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(format!("file://{}{fragment}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = String::from_utf8_lossy(&o.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// On the dumped page: per `file:line` marked `on-path`, its positions.
fn marked_lines(dom: &str) -> BTreeMap<String, String> {
    let files: Vec<String> = dom
        .split("<div class=\"file\">")
        .skip(1)
        .map(|s| s.split('<').next().unwrap().to_string())
        .collect();
    let mut out = BTreeMap::new();
    for row in dom.split("<tr id=\"k-").skip(1) {
        let tag = row.split('>').next().unwrap();
        if !tag.contains("on-path") {
            continue;
        }
        let id = tag.split('"').next().unwrap();
        let (file, line) = id.split_once('-').unwrap();
        let pos = row.split("<td class=\"pos\">").nth(1).unwrap();
        let file = &files[file.parse::<usize>().unwrap()];
        out.insert(
            format!("{file}:{line}"),
            pos.split('<').next().unwrap().to_string(),
        );
    }
    out
}

#[test]
fn chromium_shows_the_functions_and_the_path_the_fragment_names() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, out) = report_of_sort(tmp.path());
    let index = rendered(&out.join("index.html"), "");
    let names: Vec<String> = flows(&p).into_iter().map(|f| f.0).collect();
    assert_eq!(attrs(&index, "data-function=", "data-function"), names);
    // main's paths, hottest first; the second is not the one shown by
    // default.
    let main = p
        .functions
        .iter()
        .find(|f| f.display_name() == "main")
        .unwrap();
    let FunctionData::Path { counts, .. } = &main.data else {
        panic!("a path profile")
    };
    let mut paths = counts.paths.clone();
    paths.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut checked = 0;
    for &(path, _) in paths.iter().take(3) {
        let want = path_lines(&p, main.func_index, path);
        let page = out.join(format!("f{}.html", main.func_index));
        let dom = rendered(&page, &format!("#path={path}"));
        assert_eq!(marked_lines(&dom), want, "path {path}");
        assert!(dom.contains(&format!(
            "<tr id=\"p-{path}\" data-path=\"{path}\" class=\"sel\""
        )));
        checked += want.len();
    }
    assert!(checked >= 6, "{checked} lines checked");
    // A fragment that names no path, malformed at that, is said so.
    let page = out.join(format!("f{}.html", main.func_index));
    let dom = rendered(&page, "#path=%ZZ<b>");
    assert!(dom.contains("no path %ZZ%3Cb%3E among the paths listed here"));
    assert_eq!(marked_lines(&dom), BTreeMap::new());
}

/// The pages `pathprof html` writes for `profile` into `dir/NAME`.
fn pages_of(profile: &Path, dir: &Path, name: &str, extra: &[&str]) -> BTreeMap<String, String> {
    let out = dir.join(name);
    let o = html(profile, &out, extra);
    assert!(o.status.success(), "{}", stderr(&o));
    listing(&out)
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(out.join(&f)).unwrap();
            (f, text)
        })
        .collect()
}

/// An edge profile: a page per function that ran.
#[test]
fn html_reports_an_edge_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile_of(tmp.path(), "edges", &["--mode", "edge"], &["-q", "4", "1"]);
    let p = Profile::read(&profile).unwrap();
    let mut want: Vec<String> = p
        .functions
        .iter()
        .filter(|f| match &f.data {
            FunctionData::Edge { edge_counts, .. } => edge_counts.iter().any(|&c| c > 0),
            _ => panic!("an edge profile"),
        })
        .map(|f| format!("f{}.html", f.func_index))
        .collect();
    want.push("index.html".into());
    want.sort();
    let pages = pages_of(&profile, tmp.path(), "report", &[]);
    assert_eq!(pages.keys().cloned().collect::<Vec<_>>(), want);
}

/// A residual build's profile (PPP recording the paths it was not told
/// about): each path a test never ran is marked untested.
#[test]
fn html_marks_the_untested_paths_of_a_residual_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let tested = profile_of(tmp.path(), "tested", &[], &["5", "3"]);
    let interesting = ["--mode", "ppp", "--interesting", tested.to_str().unwrap()];
    let field = profile_of(
        tmp.path(),
        "field",
        &interesting,
        &["-q", "9", "-1", "7", "7"],
    );
    let p = Profile::read(&field).unwrap();
    let mut want = 0;
    for f in &p.functions {
        let FunctionData::Path {
            counts,
            ppp: Some(info),
            ..
        } = &f.data
        else {
            continue;
        };
        want += counts
            .paths
            .iter()
            .filter(|(n, _)| !info.interesting.contains(n))
            .count();
        want += (counts.self_loops.iter().enumerate())
            .filter(|&(i, &c)| c > 0 && !info.tested_self_loops.contains(&(i as u32)))
            .count();
    }
    assert!(want > 0, "the field run took paths the test did not");
    let pages = pages_of(&field, tmp.path(), "report", &["--top", "100000"]);
    let marked: usize = pages
        .values()
        .map(|h| h.matches("class=\"untested\">untested<").count())
        .sum();
    assert_eq!(marked, want);
    let per_function = attrs(&pages["index.html"], "data-untested=", "data-untested");
    let listed: usize = per_function
        .iter()
        .map(|n| n.parse::<usize>().unwrap())
        .sum();
    assert_eq!(listed, want);
}

/// A context profile: the index lists the functions its paths pass
/// through, and a page lists the paths.
#[test]
fn html_lists_the_paths_of_a_context_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = profile_of(tmp.path(), "ctx", &["--mode", "context"], &["-q", "5", "3"]);
    let p = Profile::read(&profile).unwrap();
    let ip = p.interproc.as_deref().unwrap();
    let pages = pages_of(&profile, tmp.path(), "report", &["--top", "5"]);
    let table = &pages["paths.html"];
    let rows = table.matches("<tr>").count() - 1;
    assert_eq!(rows, ip.paths.len().min(5));
    let main = p
        .functions
        .iter()
        .find(|f| f.display_name() == "main")
        .unwrap();
    let through: u64 = (ip.paths.iter())
        .filter(|path| {
            let steps = path.path.steps.iter();
            steps
                .map(|s| step_function(ip, s))
                .any(|f| f == Some(main.func_index))
        })
        .map(|path| path.count)
        .sum();
    assert!(through > 0);
    let flows = attrs(&pages["index.html"], "data-function=\"main\"", "data-flow");
    assert_eq!(flows, [through.to_string()]);
}

/// The module index of the function a step of an interprocedural path is
/// in (a call's, its callee).
fn step_function(ip: &InterprocProfile, step: &PathStep) -> Option<u32> {
    match *step {
        PathStep::Begin(f) | PathStep::Exit(f) => Some(ip.func_index(f)),
        PathStep::Resume { func, .. }
        | PathStep::Edge { func, .. }
        | PathStep::End { func, .. } => Some(ip.func_index(func)),
        PathStep::Call { callee, .. } => Some(ip.func_index(callee)),
        PathStep::ResumeAfterCall(s) | PathStep::Return(s) | PathStep::Summary(s) => {
            ip.site(s).map(|i| i.func_index)
        }
    }
}

/// Without DWARF lines, a function page lists the blocks with their
/// byte offsets.
#[test]
fn html_lists_blocks_without_source_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let wat = root().join("tests/fixtures/interproc/figure4.wat");
    let profile = tmp.path().join("wat.profile");
    let o = pathprof(&[
        "run",
        "--invoke",
        "main",
        wat.to_str().unwrap(),
        "-o",
        profile.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pages = pages_of(&profile, tmp.path(), "report", &[]);
    let p = Profile::read(&profile).unwrap();
    for f in &p.functions {
        let Some(page) = pages.get(&format!("f{}.html", f.func_index)) else {
            continue;
        };
        assert!(page.contains("The module has no DWARF lines"));
        for (b, block) in f.blocks.iter().enumerate() {
            if let Some(block) = block {
                let row = format!("<tr id=\"k-b{b}\"");
                assert!(page.contains(&row), "{row}");
                assert!(page.contains(&format!("block {b} @{:#x}", block.offset)));
            }
        }
    }
    assert!(pages.len() > 1);
}
