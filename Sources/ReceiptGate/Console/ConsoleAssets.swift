import Foundation
import HTTPServer

/// The console's stylesheet and script, compiled into the binary: the pages load nothing else.
/// Colours are chosen for contrast of at least 4.5:1 (WCAG AA) for every text on its background.
enum ConsoleAssets {
    static func response(_ name: String) -> HTTPResponse? {
        let asset: (type: String, text: String)
        switch name {
        case "console.css": asset = ("text/css; charset=utf-8", stylesheet)
        case "console.js": asset = ("text/javascript; charset=utf-8", script)
        default: return nil
        }
        var response = HTTPResponse(status: 200, body: Data(asset.text.utf8))
        response.headers.add("Content-Type", asset.type)
        response.headers.add("Cache-Control", "max-age=300")
        response.headers.add("X-Content-Type-Options", "nosniff")
        return response
    }

    static let stylesheet = rules + "\n" + Tone.stylesheet

    private static let rules = """
        :root { --ink: #1b1f24; --muted: #4a5360; --paper: #ffffff; --line: #d0d6de; --band: #f0f2f5;
                --brand: #1b2a41; --link: #0b57d0; --ok-ink: #0d5323; --ok-paper: #e6f4ea; --bad-ink: #8c1d18; --bad-paper: #fce8e6; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: var(--paper); }
        a { color: var(--link); }
        header { background: var(--brand); color: #ffffff; padding: 0.5rem 1rem; }
        header a, header a:visited { color: #ffffff; }
        header .bar { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center; }
        header .brand { font-weight: 700; text-decoration: none; margin-right: auto; }
        header label { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
        header .search { display: flex; gap: 0.25rem; flex: 1 1 18rem; max-width: 32rem; }
        header .search input { flex: 1; min-width: 0; }
        nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; margin: 0.5rem 0 0; padding: 0; }
        nav a[aria-current="page"] { font-weight: 700; text-decoration: underline; }
        main { padding: 1rem; max-width: 80rem; margin: 0 auto; }
        h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
        h2 { font-size: 1.15rem; margin: 1.5rem 0 0.5rem; }
        input, select, textarea, button { font: inherit; color: var(--ink); }
        input, select, textarea { border: 1px solid var(--muted); border-radius: 4px; padding: 0.35rem 0.5rem; background: var(--paper); }
        textarea { width: 100%; min-height: 4rem; }
        button { background: var(--link); color: #ffffff; border: 0; border-radius: 4px; padding: 0.4rem 0.9rem; cursor: pointer; }
        button.secondary { background: var(--band); color: var(--ink); border: 1px solid var(--muted); }
        button:focus-visible, a:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
        form.inline { display: inline; }
        form.stacked { display: grid; gap: 0.75rem; max-width: 40rem; }
        form.stacked label { font-weight: 600; display: block; }
        form.stacked label.inline { display: inline; font-weight: 400; margin-right: 1rem; }
        select, input, textarea { max-width: 100%; }
        form.stacked input[type="text"], form.stacked input[type="url"], form.stacked input[type="password"], form.stacked select { width: 100%; }
        form.filters { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: end; margin-bottom: 1rem; }
        form.filters > * { min-width: 0; max-width: 100%; }
        fieldset { border: 1px solid var(--line); border-radius: 4px; padding: 0.5rem 1rem; }
        legend { font-weight: 700; padding: 0 0.25rem; }
        .hint { color: var(--muted); font-size: 0.9rem; margin: 0.15rem 0 0; }
        .notice { background: var(--ok-paper); color: var(--ok-ink); padding: 0.5rem 0.75rem; border-radius: 4px; }
        p.error { background: var(--bad-paper); color: var(--bad-ink); padding: 0.5rem 0.75rem; border-radius: 4px; }
        .empty { color: var(--muted); }
        .table-wrap { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1rem; }
        caption { text-align: left; color: var(--muted); padding-bottom: 0.25rem; }
        th, td { text-align: left; padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: var(--band); color: var(--ink); }
        td code, dd code { word-break: break-all; }
        code.short { word-break: normal; white-space: nowrap; cursor: help; }
        .client[title] { cursor: help; border-bottom: 1px dotted var(--muted); }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; }
        dt { font-weight: 600; }
        dd { margin: 0; word-break: break-word; }
        .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr)); gap: 1rem; }
        .secret { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; background: var(--band); padding: 0.75rem; border-radius: 4px; }
        .secret code { font-size: 1rem; word-break: break-all; }
        figure { margin: 0; }
        figure svg { width: 100%; height: auto; max-height: 22rem; border: 1px solid var(--line); border-radius: 4px; }
        figcaption { color: var(--muted); }
        .legend { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; list-style: none; padding: 0; }
        .swatch { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.3rem; border-radius: 2px; vertical-align: -1px; }
        svg .series { fill: none; stroke-width: 2; }
        svg .axis { stroke: #4a5360; stroke-width: 1; }
        svg .grid { stroke: #d0d6de; stroke-width: 1; }
        svg text { fill: #1b1f24; font-size: 12px; }
        .chart-pair { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 1rem; align-items: start; }
        .chart-table { max-height: 24rem; overflow-y: auto; }
        .chart-table table { margin-top: 0; }
        td.count, th.count, td.money { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
        .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(13rem, 1fr)); gap: 0.5rem 1rem; margin: 0 0 1rem; }
        .figures div { border: 1px solid var(--line); border-radius: 4px; padding: 0.5rem 0.75rem; }
        .figures dt { font-weight: 400; color: var(--muted); font-size: 0.9rem; }
        .figures dd { font-size: 1.2rem; font-weight: 600; }
        @media (max-width: 40rem) {
            main { padding: 0.75rem; }
            dl { grid-template-columns: 1fr; }
            dd { margin-bottom: 0.5rem; }
            header .brand { width: 100%; }
            .chart-pair { grid-template-columns: 1fr; }
        }
        """

    /// Progressive: every page works without it. It only adds the copy button's behaviour.
    static let script = """
        "use strict";
        document.addEventListener("DOMContentLoaded", function () {
          document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
            button.addEventListener("click", function () {
              var source = document.getElementById(button.getAttribute("data-copy"));
              if (!source) { return; }
              var text = source.textContent;
              var done = function () { button.textContent = "Copied"; };
              if (navigator.clipboard && window.isSecureContext) {
                navigator.clipboard.writeText(text).then(done, function () { select(source); });
              } else {
                select(source);
                try { if (document.execCommand("copy")) { done(); } } catch (ignored) {}
              }
            });
          });
          function select(element) {
            var range = document.createRange();
            range.selectNodeContents(element);
            var selection = window.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
          }
        });
        """
}
