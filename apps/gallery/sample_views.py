"""Realistic sample data for each of the ten view types (spec §6.2).

Pure and deterministic (seeded), so the desktop's end-to-end tests see the
same rows on every run.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

CITIES = ["北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "西安", "Berlin", "Paris"]
CUSTOMERS = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨磊", "赵敏", "Alice", "Bob", "Chloé"]
PRODUCTS = [
    "键盘 Keyboard",
    "鼠标 Mouse",
    "显示器 Monitor",
    "耳机 Headphones",
    "台灯 Lamp",
    "笔记本 Notebook",
    "水杯 Mug",
    "背包 Backpack",
]
TASKS = [
    "回复邮件",
    "整理周报",
    "预订会议室",
    "Review pull request",
    "买牛奶",
    "跑步 5 公里",
    "读完《三体》",
    "Call the dentist",
    "备份照片",
    "学习 SQLite",
]
MONTHS = ["1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月", "9月", "10月", "11月", "12月"]

CHART_TYPES = ("bar", "line", "pie", "doughnut")

CODE_SAMPLE = '''"""Fibonacci numbers, three ways."""
from functools import lru_cache


def fib_iter(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@lru_cache(maxsize=None)
def fib_rec(n: int) -> int:
    return n if n < 2 else fib_rec(n - 1) + fib_rec(n - 2)


if __name__ == "__main__":
    print([fib_iter(i) for i in range(10)])  # [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert all(fib_iter(i) == fib_rec(i) for i in range(30))
'''

TEXT_SAMPLE = (
    "欢迎来到组件展示！这是一个文本视图 (text view)。\n\n"
    "• 中文、English、日本語、emoji 🎉 混排\n"
    "• 换行与空行都会保留\n"
    "• 很长的一行会自动折行：" + "天地玄黄，宇宙洪荒。日月盈昃，辰宿列张。" * 4 + "\n"
    "• 特殊字符原样显示：<b>不是粗体</b> & \"引号\" 'quotes' {{template}}"
)

TABLE_COLUMNS = [
    "订单号 Order",
    "客户 Customer",
    "城市 City",
    "商品 Product",
    "数量 Qty",
    "金额 Amount (¥)",
    "日期 Date",
]


def text_view() -> dict[str, Any]:
    return {"title": "文本 Text", "content": TEXT_SAMPLE}


def list_view(items: int) -> dict[str, Any]:
    rng = random.Random(7)
    out = []
    for i in range(items):
        task = TASKS[i % len(TASKS)]
        due = date(2026, 1, 1) + timedelta(days=i % 90)
        out.append(
            {
                "id": f"item{i + 1}",
                "title": f"{i + 1}. {task}",
                "sub": f"截止 {due.isoformat()} · 优先级 {rng.choice(['高', '中', '低'])}",
                "status": rng.choice(["待办", "进行中", "已完成"]),
            }
        )
    return {"title": f"待办清单 To-do ({items})", "items": out}


def card_view(image_url: str | None) -> dict[str, Any]:
    cards = [
        {
            "title": "黄山 Huangshan",
            "desc": "奇松、怪石、云海、温泉，「五岳归来不看山，黄山归来不看岳」。",
        },
        {"title": "西湖 West Lake", "desc": "杭州的名片：苏堤春晓、断桥残雪、雷峰夕照。"},
        {"title": "九寨沟 Jiuzhaigou", "desc": "翠海、叠瀑、彩林、雪峰，被誉为「童话世界」。"},
        {"title": "Neuschwanstein", "desc": "A 19th-century palace on a rugged hill in Bavaria."},
    ]
    if image_url:
        for card in cards:
            card["image"] = image_url
    return {"title": "旅行目的地 Destinations", "cards": cards}


def table_view(rows: int) -> dict[str, Any]:
    rng = random.Random(42)
    out = []
    for i in range(rows):
        qty = rng.randint(1, 9)
        price = rng.choice([39, 59, 129, 199, 899, 1299])
        day = date(2025, 1, 1) + timedelta(days=rng.randint(0, 364))
        out.append(
            [
                f"SO-{10001 + i}",
                rng.choice(CUSTOMERS),
                rng.choice(CITIES),
                rng.choice(PRODUCTS),
                qty,
                qty * price,
                day.isoformat(),
            ]
        )
    return {"title": f"订单 Orders ({rows})", "columns": list(TABLE_COLUMNS), "rows": out}


def form_view() -> dict[str, Any]:
    return {
        "title": "注册 Sign up",
        "description": "一个包含常见字段类型的表单。",
        "fields": [
            {
                "name": "name",
                "label": "姓名 Name",
                "type": "text",
                "value": "张三",
                "required": True,
            },
            {
                "name": "email",
                "label": "邮箱 Email",
                "type": "email",
                "placeholder": "you@example.com",
            },
            {"name": "age", "label": "年龄 Age", "type": "number", "value": 30},
            {
                "name": "city",
                "label": "城市 City",
                "type": "select",
                "options": CITIES[:5],
                "value": "杭州",
            },
            {"name": "birthday", "label": "生日 Birthday", "type": "date", "value": "1995-06-18"},
            {"name": "bio", "label": "简介 Bio", "type": "textarea", "value": "喜欢爬山和写代码。"},
            {
                "name": "newsletter",
                "label": "订阅新闻 Newsletter",
                "type": "checkbox",
                "value": True,
            },
        ],
    }


def chart_view(points: int, kind: str, series: int) -> dict[str, Any]:
    rng = random.Random(points * 31 + series)
    labels = [MONTHS[i] if points <= 12 else f"P{i + 1}" for i in range(points)]
    title = {
        "bar": "月销售额 Monthly sales",
        "line": "访问量趋势 Visits",
        "pie": "渠道占比 Channels",
        "doughnut": "渠道占比 Channels",
    }[kind]
    if series == 1:
        return {
            "type": kind,
            "title": title,
            "labels": labels,
            "values": [rng.randint(20, 120) for _ in range(points)],
        }
    return {
        "type": kind,
        "title": title,
        "labels": labels,
        "datasets": [
            {"label": f"{2023 + s} 年", "values": [rng.randint(20, 120) for _ in range(points)]}
            for s in range(series)
        ],
    }


def code_view() -> dict[str, Any]:
    return {"language": "python", "title": "fibonacci.py", "code": CODE_SAMPLE}


def dashboard_view() -> dict[str, Any]:
    chart = chart_view(6, "line", 1)
    table = table_view(5)
    return {
        "title": "运营看板 Dashboard",
        "widgets": [
            {
                "type": "text",
                "title": "今日概况 Today",
                "content": "订单 128 · 收入 ¥23,560 · 新用户 42",
            },
            {
                "type": "chart",
                "title": chart["title"],
                "chart_type": "line",
                "labels": chart["labels"],
                "values": chart["values"],
            },
            {
                "type": "table",
                "title": "最新订单 Latest orders",
                "columns": table["columns"],
                "rows": table["rows"],
            },
            {"type": "list", "title": "待办 To-do", "items": list_view(3)["items"]},
        ],
    }
