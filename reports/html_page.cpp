#include "reports/html_page.h"

namespace lockstep::reports {
namespace {

const char* kBaseCss = R"css(
:root{--ok:#2b8a3e;--bad:#c92a2a;--warn:#e67700;--ink:#212529;--muted:#6c757d;--line:#dee2e6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:#f8f9fa}
main{max-width:1180px;margin:0 auto;padding:0 20px 32px}
.banner{color:#fff;padding:18px 24px;margin-bottom:20px}
.banner.pass{background:var(--ok)}.banner.fail{background:var(--bad)}
.banner h1{margin:0;font-size:26px;letter-spacing:.5px}
.banner p{margin:4px 0 0;opacity:.95}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin:0 0 16px}
h2{font-size:17px;margin:0 0 10px}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{text-align:left;padding:5px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.4px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code{font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;background:#f1f3f5;padding:1px 4px;border-radius:3px}
pre{font:12.5px/1.5 ui-monospace,"DejaVu Sans Mono",monospace;background:#f1f3f5;padding:10px 12px;border-radius:6px;white-space:pre-wrap;margin:6px 0}
.pill{display:inline-block;padding:1px 9px;border-radius:10px;font-weight:600;font-size:12px;color:#fff}
.notice{border-left:4px solid var(--warn);background:#fff4e6;padding:8px 12px;margin:0 0 16px;border-radius:4px}
.notice.bad{border-color:var(--bad);background:#fff5f5}
.muted{color:var(--muted)}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:14px;margin-top:12px}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:8px;background:#fff}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px}
svg.plot{width:100%;height:auto;display:block}
.unavailable{color:var(--muted);font-style:italic;padding:40px 10px;text-align:center;background:#f8f9fa;border-radius:4px;margin:0}
footer{color:var(--muted);text-align:center;font-size:12px;padding:8px}
)css";

}  // namespace

std::string td(const std::string& html, bool num) {
  return num ? "<td class=\"num\">" + html + "</td>" : "<td>" + html + "</td>";
}

std::string th(const std::string& html, bool num) {
  return num ? "<th class=\"num\">" + html + "</th>" : "<th>" + html + "</th>";
}

std::string html_code(const std::string& text) {
  return "<code>" + html_escape(text) + "</code>";
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string figure(const std::string& caption, const Plot& p) {
  std::string body =
      p.ok() ? p.svg
             : "<p class=\"unavailable\">plot unavailable: " + html_escape(p.error) + "</p>";
  return "<figure><figcaption>" + html_escape(caption) + "</figcaption>" + body + "</figure>\n";
}

std::string html_page_begin(const std::string& title, const std::string& extra_css) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         html_escape(title) + "</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>" + kBaseCss +
         extra_css + "</style>\n</head>\n<body>\n";
}

std::string html_page_end() {
  return "</body>\n</html>\n";
}

}  // namespace lockstep::reports
