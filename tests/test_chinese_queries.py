"""Questions over Chinese notes: an English question asked of a folder of Chinese pages
(tldr pages, CC-BY 4.0, copied here) on the real models, Chroma and index.

A Latin-script question shares only command names and numbers with a Chinese page, so
those keyword matches count half in the blend (SearchTuning.other_script_keyword): the
page the multilingual vectors find is not pushed down by pages that merely share a
word such as `jobs` or `10`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from askmd.index import embedding_models as models
from askmd.pipeline import Index
from askmd.search.tuning import SHIPPED
from tests.conftest import synced_index

if not models.installed(models.CJK_MODEL):
    pytest.skip(f"needs {models.CJK_MODEL.pin}", allow_module_level=True)

PAGES = {
    "common/crontab.md": """\
# crontab

> 为当前用户计划 cron 任务，按照时间间隔运行。
> 更多信息：<https://manned.org/crontab>。

- 编辑当前用户的 crontab 文件：

`crontab -e`

- 为特定用户修改 crontab 文件：

`sudo crontab -e -u {{用户}}`

- 用指定文件的内容，覆盖当前的 crontab 文件：

`crontab {{路径/到/文件}}`

- 查看当前用户，现存的 cron 任务列表：

`crontab -l`

- 移除当前用户的所有 cron 任务：

`crontab -r`

- 每天 10:00 运行任务的示例（* 表示任意值）：

`0 10 * * * {{要_运行的_命令}}`

- 每 10 分钟运行命令的 crontab 任务条目示例：

`*/10 * * * * {{要_运行的_命令}}`

- 每周五的 02:30 运行指定脚本的 crontab 任务条目示例：

`30 2 * * Fri /{{路径/到/脚本.sh}}`
""",
    "common/cron.md": """\
# cron

> 一个系统任务计划程序，用于无人值守运行工作或任务。
> 提交、修改或删除 `cron` 任务条目的命令，是 `crontab`。

- 查看管理 `cron` 条目的文档：

`tldr crontab`
""",
    "common/jobs.md": """\
# jobs

> 显示当前会话中作业的状态。
> 更多信息：<https://manned.org/jobs>。

- 显示所有作业的状态：

`jobs`

- 显示特定作业的状态：

`jobs %{{作业_id}}`

- 显示所有作业的状态和进程 ID：

`jobs -l`

- 显示所有作业的进程 ID：

`jobs -p`
""",
    "linux/at.md": """\
# at

> 稍后执行一次性命令。
> 执行结果将通过邮件发送给用户。
> 更多信息：<https://manned.org/at>。

- 启动 `atd` 守护进程：

`systemctl start atd`

- 以交互方式创建命令并在 5 分钟后执行（完成后按 `<Ctrl d>`）：

`at now + 5 minutes`

- 以交互方式创建命令并在特定时间执行：

`at {{hh:mm}}`

- 在今天上午 10:00 从标准输入执行命令：

`echo "{{command}}" | at 1000`

- 在下周二执行给定文件中的命令：

`at -f {{路径/到/文件}} 9:30 PM Tue`

- 列出当前用户的所有排队任务（与 `atq` 相同）：

`at -l`

- 查看指定任务：

`at -c {{任务号}}`
""",
    "common/at.md": """\
# at

> 在稍后时间执行命令。
> 结果将被发送到用户的邮箱。
> 更多信息：<https://manned.org/at>。

- 交互式创建命令并在 5 分钟后执行（完成后按 `<Ctrl d>`）：

`at now + 5 minutes`

- 交互式创建命令并在特定时间执行：

`at {{小时:分钟}}`

- 在今天 10:00 AM 从标准输入执行一个命令：

`echo "{{命令}}" | at 1000`

- 在下周二晚上 9:30 从指定文件执行命令：

`at -f {{路径/到/文件}} 9:30 PM Tue`

- 列出当前用户的所有待执行任务（等同于 `atq`）：

`at -l`

- 查看指定任务：

`at -c {{任务编号}}`
""",
    "common/fg.md": """\
# fg

> 在前台运行作业。
> 另请参阅：`jobs`, `bg`, `disown`, `%`。
> 更多信息：<https://www.gnu.org/software/bash/manual/bash.html#index-fg>。

- 将最近暂停或正在后台运行的作业切换到前台：

`fg`

- 将指定作业切换到前台（运行 `jobs` 查找作业编号）：

`fg %{{作业编号}}`
""",
    "common/sleep.md": """\
# sleep

> 延迟指定的一段时间。
> 更多信息：<https://manned.org/sleep>。

- 按秒数延迟：

`sleep {{seconds}}`

- 在20秒延迟后执行指定命令：

`sleep 20 && {{command}}`
""",
    "common/nohup.md": """\
# nohup

> 允许进程在终端关闭后继续运行。
> 更多信息：<https://www.gnu.org/software/coreutils/manual/html_node/nohup-invocation.html>。

- 运行一个可在终端关闭后继续运行的进程：

`nohup {{命令}} {{参数1 参数2 ...}}`

- 在后台模式下启动 `nohup`：

`nohup {{命令}} {{参数1 参数2 ...}} &`

- 运行一个可在终端关闭后继续运行的 shell 脚本：

`nohup {{路径/到/脚本.sh}} &`

- 运行一个进程，并将输出写入指定文件：

`nohup {{命令}} {{参数1 参数2 ...}} > {{路径/到/输出文件}} &`
""",
}
QUESTION = "How do I schedule a job to run every 10 minutes?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return synced_index(tmp_path_factory.mktemp("zh"), PAGES)


def test_english_question_finds_the_chinese_page_first(index: Index) -> None:
    hits = index.search(QUESTION, 5)
    assert hits[0].source == "common/crontab.md", [h.source for h in hits]


def test_chinese_question_keeps_full_keyword_weight(index: Index) -> None:
    """The discount is for a question in another script: a Chinese question ranks the
    same with or without it."""
    question = "每隔十分钟运行一次命令"
    try:
        ranked = []
        for share in (1.0, SHIPPED.other_script_keyword):
            index.tuning = replace(SHIPPED, other_script_keyword=share)
            ranked.append([(h.source, round(h.score, 6)) for h in index.search(question, 5)])
    finally:
        index.tuning = SHIPPED
    assert ranked[0] and ranked[0] == ranked[1]
