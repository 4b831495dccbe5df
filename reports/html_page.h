// The HTML page module every HTML report shares (comparison, history, scaling, diagnosis): text
// escaping, a plot's <figure>, and the page shell: the doctype,
// <head> (charset, viewport, title, an empty favicon so the browser fetches nothing) and one
// inline stylesheet: the base rules below plus the report's own. No scripts, no external URLs.
//
// The base stylesheet: the colours (--ok, --bad, --warn, --ink, --muted, --line), body, main,
// the banner (.banner.pass / .banner.fail), section, h2, tables (td.num / th.num right-aligned),
// code, pre, .pill, .notice (.notice.bad), .muted, .plots, figure, figcaption, svg.plot,
// .unavailable and footer. A report's extra CSS comes after it, so it can add and override.
#pragma once

#include <string>

#include "reports/gnuplot.h"

namespace lockstep::reports {

// Text made safe for HTML content and attribute values (& < > " ').
std::string html_escape(const std::string& s);

// The <figure> for a plot on an HTML page: the caption (escaped) and the inline SVG, or
// "plot unavailable: why" when there is none.
std::string figure(const std::string& caption, const Plot& p);

// "<!DOCTYPE html> ... <style>BASE EXTRA</style>\n</head>\n<body>\n". title is plain text (escaped
// here); extra_css is the report's own rules, appended to the base stylesheet.
std::string html_page_begin(const std::string& title, const std::string& extra_css = "");

// Table cells holding HTML (escape text first): num right-aligns them (td.num / th.num).
std::string td(const std::string& html, bool num = false);
std::string th(const std::string& html, bool num = false);

// A <code> span of plain text (escaped here).
std::string html_code(const std::string& text);

// "</body>\n</html>\n": closes what html_page_begin opened.
std::string html_page_end();

}  // namespace lockstep::reports
