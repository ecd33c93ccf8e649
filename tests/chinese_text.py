"""A small Chinese text (simplified, with some English words and numbers) in documents of
a few sentences, and a vocabulary of its characters, for the whole-word masking tests.
Written for these tests; jieba segments it into words of one to four characters. And the
check of written instances against jieba called on the text directly (`check_instances`),
which acceptance/chinese_whole_words.py runs on real Chinese text."""

import numpy as np

DOCUMENTS = [
    ["我们在北京大学学习自然语言处理。", "老师每天都给学生布置很多作业。",
     "图书馆里有许多关于计算机科学的书籍。", "同学们经常在食堂讨论问题。"],
    ["今天的天气非常好，我们去公园散步吧。", "公园里的花开得很漂亮，游客也很多。",
     "孩子们在草地上踢足球，老人们在树下下棋。"],
    ["中国的经济在过去三十年里发展迅速。", "许多城市建设了新的地铁和高速公路。",
     "人工智能技术正在改变人们的生活方式。", "手机支付已经非常普遍，年轻人很少使用现金。",
     "政府鼓励企业投资研究和开发。"],
    ["这家餐厅的饺子很好吃，价格也便宜。", "服务员的态度非常热情。",
     "我们点了三个菜和一碗汤，一共花了八十元。"],
    ["他是一名软件工程师，在上海的一家公司工作。", "他每天坐地铁上班，大约需要四十分钟。",
     "周末他喜欢看电影或者去健身房锻炼身体。", "他最近在学习 Python 和 TensorFlow。"],
    ["长江是中国最长的河流，全长约六千三百公里。", "黄河被称为中华民族的母亲河。",
     "这两条河流对中国文化的发展有重要影响。"],
    ["医生建议病人多喝水，早点休息。", "医院的设备很先进，医生的经验也很丰富。",
     "如果症状没有改善，请下周再来检查。"],
    ["学校图书馆明天开始延长开放时间。", "学生可以在晚上十点以前借书和还书。",
     "新的阅览室可以容纳两百个人。", "管理员提醒大家保持安静。"],
    ["这部电影讲述了一个普通家庭的故事。", "演员的表演非常自然，音乐也很感人。",
     "很多观众看完以后都哭了。"],
    ["我们计划明年春天去云南旅游。", "云南的风景很美，少数民族的文化也很丰富。",
     "我们想去大理和丽江看看古城。", "听说那里的咖啡和鲜花饼都很有名。"],
]

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LATIN = ["python", "tensorflow", "##flow", "tensor"]


def vocabulary(documents=DOCUMENTS, leave_out=""):
    """Specials, every character of the text but those of `leave_out` (which become
    [UNK]), and the English words, lower-cased."""
    chars = sorted({c for doc in documents for line in doc for c in line
                    if not c.isspace() and not c.isascii()} - set(leave_out))
    return SPECIALS + chars + LATIN


def write(folder, documents=DOCUMENTS, leave_out=""):
    """(text file, vocabulary file) in `folder`."""
    text = folder / "chinese.txt"
    text.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n",
                    encoding="utf-8")
    vocab = folder / "chinese-vocab.txt"
    vocab.write_text("\n".join(vocabulary(documents, leave_out)) + "\n", encoding="utf-8")
    return str(text), str(vocab)


def read_documents(path):
    """Documents (lists of stripped non-empty lines) of a text file, a blank line between
    documents."""
    documents = [[]]
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            line = line.strip()
            if line:
                documents[-1].append(line)
            elif documents[-1]:
                documents.append([])
    return [d for d in documents if d]


def _is_cjk(char):
    from text.tokenization import is_cjk
    return is_cjk(ord(char))


def word_tokens(documents, tokenizer, segment):
    """All documents' token ids in a row (-1 between documents) and, for each token, the
    number of the segmenter's word it belongs to if that word is two or more CJK
    characters (else -1): each line cut by `segment`, each word tokenized alone. Lines
    whose words do not tokenize as the whole line does are left out of the words (their
    tokens -1) and counted. Returns (ids, words, lines_left_out)."""
    ids, words, left_out, number = [], [], 0, 0
    for document in documents:
        for line in document:
            pieces, owners = [], []
            for word in segment(line):
                tokens = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word))
                whole = len(word) > 1 and all(_is_cjk(c) for c in word)
                pieces += tokens
                owners += [number if whole else -1] * len(tokens)
                number += whole
            if pieces != tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)):
                owners = [-1] * len(pieces)
                left_out += 1
            ids += pieces
            words += owners
        ids.append(-1)
        words.append(-1)
    return np.array(ids, np.int32), np.array(words, np.int64), left_out


def _occurrences(haystack, needle, most=2):
    """Up to `most` token offsets where `needle`'s ids occur in `haystack` (int32 bytes)."""
    found, start = [], 0
    while len(found) < most:
        at = haystack.find(needle, start)
        if at < 0:
            break
        if at % 4 == 0:
            found.append(at // 4)
        start = at + 1
    return found


def check_instances(examples, ids, words):
    """Locates each segment of each instance (its masked tokens restored) in the text and
    counts, over the segmenter's words in it, those masked whole, those split (some
    characters masked, some not: a failure), and the masked share. Segments found more
    than once or not at all (short ones) are counted, not checked."""
    haystack = ids.tobytes()
    counts = dict(segments=0, unlocated=0, whole=0, split=0, masked=0, tokens=0)
    for e in examples:
        n, k = int(sum(e["input_mask"])), int(sum(e["masked_lm_weights"]))
        original = np.array(e["input_ids"][:n], np.int32)
        masked = np.zeros(n, bool)
        positions = np.asarray(e["masked_lm_positions"][:k])
        original[positions] = e["masked_lm_ids"][:k]
        masked[positions] = True
        counts["masked"] += k
        counts["tokens"] += n
        seps = np.flatnonzero(original == original[-1])  # [SEP]
        for lo, hi in ((1, seps[0]), (seps[0] + 1, n - 1)):
            if hi <= lo:
                continue
            at = _occurrences(haystack, original[lo:hi].tobytes())
            if len(at) != 1:
                counts["unlocated"] += 1
                continue
            counts["segments"] += 1
            owner = words[at[0]:at[0] + hi - lo]
            hit = masked[lo:hi]
            for word in np.unique(owner[owner >= 0]):
                mine = hit[owner == word]
                if mine.all() and len(mine) > 1:
                    counts["whole"] += 1
                elif mine.any() and not mine.all():
                    counts["split"] += 1
    return counts
