"""Which wikilinks of an article are not prose: links into other namespaces (files,
categories, templates...) and interlanguage links, in any wiki's own language.

Pipeline position: inside `extract_wikipedia` (dump -> documents): `extract_wikipedia`
reads the namespace names of the dump's `<siteinfo>`, `wikitext_cleaning` drops the links
this module recognises, with everything inside them (an image's options and caption, a
category's name).

A wiki accepts, for each namespace, its own name (from `<siteinfo>`: `ファイル`, `Файл`,
`वर्ग`...), MediaWiki's English canonical name (`File`, `Category`...) and a few aliases
(`Image`, `画像`, `Bild`...) that `<siteinfo>` does not list; names are case-insensitive
and `_` is a space. A link whose target names a media file (`X:Photo.jpg`) is a file link
whatever its prefix. Interlanguage links are a language code and a colon (`[[fr:Paris]]`).
"""

import re

# MediaWiki's English canonical names of the namespaces other than articles, which every
# wiki accepts, and the English aliases.
CANONICAL_NAMES = (
    "Media", "Special", "Talk", "User", "User talk", "Project", "Project talk",
    "Wikipedia", "Wikipedia talk", "WP", "File", "File talk", "Image", "Image talk",
    "MediaWiki", "MediaWiki talk", "Template", "Template talk", "Help", "Help talk",
    "Category", "Category talk", "Portal", "Portal talk", "Book", "Draft", "Module",
    "TimedText", "Gadget", "Gadget definition", "Topic")

# Aliases of the file and category namespaces that wikis accept beside the names their
# <siteinfo> lists (MediaWiki's language files, $namespaceAliases), by language code.
ALIASES = {
    "ar": ("صورة", "ملف"), "ca": ("Imatge",), "de": ("Bild",), "el": ("Εικόνα",),
    "es": ("Imagen",), "fa": ("تصویر",), "he": ("תמונה",), "it": ("Immagine",),
    "ja": ("画像", "カテゴリ"), "ko": ("그림",), "nl": ("Afbeelding",), "pl": ("Grafika",),
    "pt": ("Imagem", "Arquivo"),
    "ru": ("Изображение",), "sv": ("Bild",), "tr": ("Resim",), "uk": ("Зображення",),
    "vi": ("Hình",),
    "zh": ("图像", "圖像", "文件", "檔案", "档案", "分类", "分類"),
}

# Interlanguage links: a language code (fr, zh-yue, be-x-old, simple) and a colon.
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[a-z0-9]+)*|simple", re.IGNORECASE)
_MEDIA_FILE = re.compile(
    r"\.(jpe?g|png|gif|svg|tiff?|webp|bmp|xcf|ogg|ogv|oga|opus|webm|mp3|wav|flac|midi?|"
    r"pdf|djvu|stl)\s*$", re.IGNORECASE)


def _normal(name):
    return " ".join(name.replace("_", " ").split()).casefold()


class NonArticleLinks:
    """`links.match(title)`: True when a wikilink to `title` is not part of the prose.

    Args:
        namespace_names: the names of the wiki's namespaces other than articles (from
            its `<siteinfo>`).
        language: the wiki's language code (`ja`, `zh-yue`): its aliases are added.
    """

    def __init__(self, namespace_names=(), language="en"):
        names = list(namespace_names) + list(CANONICAL_NAMES)
        names += ALIASES.get(language, ()) + ALIASES.get(language.split("-")[0], ())
        self.prefixes = {_normal(n) for n in names if n}

    def match(self, title):
        title = title.strip().lstrip(":").strip()
        if ":" not in title:
            return False
        prefix, rest = title.split(":", 1)
        return (_normal(prefix) in self.prefixes or
                bool(_LANGUAGE_CODE.fullmatch(prefix.strip())) or
                bool(_MEDIA_FILE.search(rest)))
