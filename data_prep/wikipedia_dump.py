"""Reading a Wikipedia dump (`*-pages-articles*.xml.bz2`): its articles' titles and
wikitext, streamed, and the language its name says.

Pipeline position: a dump -> these articles -> `wikitext_cleaning` (prose passages) ->
`sentences` -> document files (the root's `extract_wikipedia.py`).
"""

import bz2
import xml.etree.ElementTree as ET


def iter_articles(path, stats):
    """Yields (title, wikitext) of the namespace-0, non-redirect pages of a dump; sets
    stats["dbname"] and stats["namespaces"] (the names of the other namespaces, from the
    dump's <siteinfo>)."""
    opener = bz2.open if path.endswith(".bz2") else open
    try:
        handle = opener(path, "rb")
    except OSError as e:
        raise ValueError(f"{path}: cannot read the dump ({e}).") from e
    with handle:
        namespace = None
        try:
            for event, elem in ET.iterparse(handle, events=("start", "end")):
                tag = elem.tag.rsplit("}", 1)[-1]
                if namespace is None and event == "start":
                    namespace = elem.tag[:-len(tag)]
                    if tag != "mediawiki":
                        raise ValueError(f"{path}: not a MediaWiki XML dump (root element "
                                         f"<{tag}>).")
                if event != "end":
                    continue
                if tag == "dbname":
                    stats["dbname"] = (elem.text or "").strip()
                elif tag == "namespace" and elem.get("key") != "0" and elem.text:
                    stats.setdefault("namespaces", []).append(elem.text.strip())
                elif tag == "page":
                    stats["pages"] += 1
                    ns = elem.findtext(namespace + "ns")
                    text = elem.findtext(f"{namespace}revision/{namespace}text") or ""
                    redirect = elem.find(namespace + "redirect") is not None or \
                        text.lstrip()[:9].upper() == "#REDIRECT"
                    if ns != "0":
                        stats["other_namespaces"] += 1
                    elif redirect:
                        stats["redirects"] += 1
                    else:
                        yield elem.findtext(namespace + "title") or "", text
                    elem.clear()
        except ET.ParseError as e:
            raise ValueError(f"{path}: malformed XML ({e}).") from e
        except (EOFError, OSError) as e:
            raise ValueError(f"{path}: the dump is truncated or not bz2 ({e}).") from e


def language_of(dbname):
    """"enwiki" -> "en", "zh_yuewiki" -> "zh-yue"."""
    return dbname[:-len("wiki")].replace("_", "-") if dbname.endswith("wiki") else "en"
