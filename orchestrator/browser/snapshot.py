"""The page as the agent reads it (`browser_snapshot`): headings, text and the elements it can act
on, in document order; each actionable element gets a ref (`e12`) kept in an attribute whose name
is the session's own, so the same element keeps its ref for the page's life and refs are never
reused within a session."""

from __future__ import annotations

# Takes [attribute name, first free ref number, most lines]; returns {lines, next}.
SNAPSHOT_SCRIPT = r"""
([attr, start, limit]) => {
  let next = start;
  const lines = [];
  const actionable =
    'a[href],button,input,select,textarea,summary,[role=button],[role=link],[role=checkbox],' +
    '[role=radio],[role=tab],[role=menuitem],[role=switch],[role=textbox],[contenteditable=true],[onclick]';
  const tagRoles = {A: 'link', BUTTON: 'button', SELECT: 'combobox', TEXTAREA: 'textbox', SUMMARY: 'button'};
  const inputRoles = {checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button', reset: 'button', range: 'slider'};
  const clean = (text) => (text || '').replace(/\s+/g, ' ').trim().slice(0, 120);
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    return box.width > 0 && box.height > 0 && style.visibility !== 'hidden' && style.display !== 'none';
  };
  const roleOf = (el) => {
    if (el.getAttribute('role')) return el.getAttribute('role');
    if (el.tagName === 'INPUT') return inputRoles[el.type] || 'textbox';
    return tagRoles[el.tagName] || el.tagName.toLowerCase();
  };
  const labelOf = (el) => {
    if (el.labels && el.labels.length) return el.labels[0].innerText;
    const by = el.getAttribute('aria-labelledby');
    if (by && document.getElementById(by)) return document.getElementById(by).innerText;
    return '';
  };
  const nameOf = (el) => {
    const button = el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type);
    return clean(
      el.getAttribute('aria-label') || labelOf(el) || el.getAttribute('placeholder') ||
      el.getAttribute('alt') || el.getAttribute('title') || (button ? el.value : '') ||
      (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' ? el.name : el.innerText)
    );
  };
  const ownText = (el) =>
    clean(Array.from(el.childNodes).filter((n) => n.nodeType === 3).map((n) => n.textContent).join(' '));
  for (const el of document.body ? document.body.querySelectorAll('*') : []) {
    if (lines.length >= limit) break;
    if (['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE'].includes(el.tagName) || !shown(el)) continue;
    if (el.matches(actionable) && !el.disabled) {
      let ref = el.getAttribute(attr);
      if (!ref) {
        ref = 'e' + next++;
        el.setAttribute(attr, ref);
      }
      const kind = el.tagName === 'INPUT' && el.type === 'password' ? ' [password]' : '';
      const checked = el.checked ? ' [checked]' : '';
      lines.push(`${roleOf(el)} "${nameOf(el)}"${kind}${checked} [ref=${ref}]`);
    } else if (/^H[1-6]$/.test(el.tagName)) {
      lines.push(`heading "${clean(el.innerText)}" [level=${el.tagName[1]}]`);
    } else {
      const text = ownText(el);
      if (text) lines.push(`text: ${text}`);
    }
  }
  return {lines, next};
}
"""
