//! The style sheet and script every page carries inline (the report is
//! opened from disk, with no server and no network), and HTML escaping.

/// Text from a profile or a source file, safe in an element or an
/// attribute value.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON inside a `<script>` element: `</` would end the element early.
pub(crate) fn script_json(value: &serde_json::Value) -> String {
    value.to_string().replace("</", "<\\/")
}

/// A page with `title`, the style sheet, `body` and, when given, a script.
pub(crate) fn page(title: &str, body: &str, script: Option<&str>) -> String {
    let script = script.map_or(String::new(), |s| format!("<script>{s}</script>\n"));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}{script}</body>\n</html>\n",
        escape(title)
    )
}

pub(crate) const CSS: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.1em; margin: 1.2em 0 .4em; }
a { color: #1456a0; text-decoration: none; }
a:hover { text-decoration: underline; }
.meta { color: #555; margin-bottom: 1em; }
.note { background: #fff4d6; border-left: 4px solid #e0a800; padding: .3em .6em; margin: .4em 0; }
table { border-collapse: collapse; }
th, td { padding: 2px 8px; text-align: left; vertical-align: top; }
th { border-bottom: 1px solid #bbb; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.list tr:nth-child(even) { background: #f6f6f6; }
.bar { display: inline-block; width: 120px; height: .8em; background: #e4e4e4; vertical-align: middle; }
.bar > span { display: block; height: 100%; background: #3c9a4e; }
.notrun { color: #999; }
.columns { display: flex; gap: 1.5em; align-items: flex-start; }
.source { flex: 1 1 auto; min-width: 0; overflow-x: auto; }
.cfg { flex: 0 0 auto; position: sticky; top: 0; max-height: 100vh; overflow: auto; }
table.src { font: 12px/1.35 ui-monospace, monospace; width: 100%; }
table.src td { padding: 0 6px; white-space: pre; }
table.src td.count, table.src td.pos, table.src td.no { width: 1%; }
table.src td.count { color: #555; text-align: right; min-width: 5em; }
table.src td.pos { color: #b03000; text-align: right; min-width: 2.5em; font-weight: 600; }
table.src td.no { color: #999; text-align: right; border-right: 1px solid #ddd; }
table.src tr.miss td.count { background: #fbe1e1; }
table.src tr.hit td.count { background: #e3f4e3; }
table.src tr.on-path td.src, table.src tr.on-path td.no { background: #ffe38a; }
.file { font-weight: 600; margin: .8em 0 .2em; }
.paths tr { cursor: pointer; }
.paths tr.sel { background: #ffe38a !important; }
.untested { color: #b00020; font-weight: 600; }
select { font: inherit; margin: 0 0 .6em; }
svg .node rect { fill: #eef3fb; stroke: #6b86b3; }
svg .node.notrun rect { fill: #f3f3f3; stroke: #bbb; }
svg .node text { font: 11px ui-monospace, monospace; fill: #222; }
svg .node.sel rect { fill: #ffe38a; stroke: #b07800; stroke-width: 2; }
svg path.edge { fill: none; stroke: #6b86b3; stroke-opacity: .75; }
svg path.unrun { fill: none; stroke: #ccc; stroke-dasharray: 3 3; }
svg path.edge.sel { stroke: #e07000; stroke-opacity: 1; }
"#;

/// The function page's script: selects the path the URL fragment names
/// (`#path=12`, or a self loop's `#path=s0`), else the hottest, marks its
/// lines with their positions along it and colours it in the CFG.
pub(crate) const FUNCTION_JS: &str = r#"
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("paths-data").textContent);
  var select = document.getElementById("path-select");
  var message = document.getElementById("path-message");
  function clear() {
    document.querySelectorAll(".on-path").forEach(function (e) {
      e.classList.remove("on-path");
      var pos = e.querySelector(".pos");
      if (pos) { pos.textContent = ""; }
    });
    document.querySelectorAll(".sel").forEach(function (e) { e.classList.remove("sel"); });
  }
  function mark(id) {
    var el = document.getElementById(id);
    if (el) { el.classList.add("sel"); }
  }
  function choose(id, scroll) {
    clear();
    var path = data.paths.find(function (p) { return p.id === id; });
    if (!path) { return false; }
    var first = null;
    path.keys.forEach(function (k) {
      var row = document.getElementById(k[0]);
      if (!row) { return; }
      row.classList.add("on-path");
      row.querySelector(".pos").textContent = k[1];
      first = first || row;
    });
    path.blocks.forEach(function (b) { mark("n" + b); });
    path.edges.forEach(function (e) { mark("e" + e); });
    mark("p-" + id);
    if (select) { select.value = id; }
    // Only when the reader chose the path: on load, the page starts at its top.
    if (scroll && first) { first.scrollIntoView({ block: "center" }); }
    return true;
  }
  function fromFragment(event) {
    var m = /(?:^#|&)path=([^&]*)/.exec(location.hash);
    var id = m ? m[1] : (data.paths.length ? data.paths[0].id : null);
    try { id = id === null ? null : decodeURIComponent(id); } catch (e) { /* kept as typed */ }
    message.textContent = "";
    if (id !== null && !choose(id, event !== undefined)) {
      message.textContent = "no path " + id + " among the paths listed here";
    }
  }
  if (select) {
    select.addEventListener("change", function () { location.hash = "path=" + select.value; });
  }
  document.querySelectorAll(".paths tr[data-path]").forEach(function (tr) {
    tr.addEventListener("click", function () { location.hash = "path=" + tr.dataset.path; });
  });
  window.addEventListener("hashchange", fromFragment);
  fromFragment();
})();
"#;
