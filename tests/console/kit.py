"""Helpers of the console tests: the labelling check run in the browser."""

from __future__ import annotations

CHECK = """() => {
  const problems = [];
  if (!document.documentElement.lang) problems.push("no lang");
  const h1 = document.querySelectorAll("h1").length;
  if (h1 !== 1) problems.push(h1 + " h1");
  for (const el of document.querySelectorAll("input, select, textarea, button")) {
    if (el.type === "hidden" || el.closest("[hidden]")) continue;
    const named = (el.labels && el.labels.length) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby")
      || (el.tagName === "BUTTON" && el.textContent.trim());
    if (!named) problems.push("unnamed " + el.outerHTML.slice(0, 80));
  }
  for (const img of document.querySelectorAll("img")) if (!img.hasAttribute("alt")) problems.push("img without alt");
  return problems;
}"""
