"""The targets of docker/Dockerfile, for the scripts that check and run what the images promise.

target_text(path, name) is the text of stage NAME (`FROM ... AS NAME` up to the next FROM) together
with the texts of the stages it is built from (FROM STAGE) or copies from (COPY --from=STAGE),
with line continuations joined: what went into that image.
"""
import re

STAGE = re.compile(r"^FROM\s+(\S+)(?:\s+AS\s+([\w.-]+))?\s*$", re.M | re.I)
COPY_FROM = re.compile(r"^COPY\s+--from=([\w.-]+)", re.M | re.I)


def stages(path):
    """{name: (base, text)} of every named stage of the Dockerfile at path."""
    with open(path) as f:
        joined = re.sub(r"\\\n", " ", f.read())
    found = list(STAGE.finditer(joined))
    result = {}
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(joined)
        if m.group(2):
            result[m.group(2)] = (m.group(1), joined[m.start():end])
    return result


def target_text(path, name):
    """The text of stage name and of every stage it derives from; None when there is no such stage."""
    all_stages = stages(path)
    if name not in all_stages:
        return None
    seen, todo, parts = set(), [name], []
    while todo:
        stage = todo.pop()
        if stage in seen or stage not in all_stages:
            continue
        seen.add(stage)
        base, text = all_stages[stage]
        parts.append(text)
        todo.append(base)
        todo.extend(COPY_FROM.findall(text))
    return "\n".join(parts)
