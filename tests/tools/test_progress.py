"""tools/progress.py: a bar on a terminal only, redrawn once per whole percent (by the count, never by time)."""

import io

from conftest import Terminal

from cvmc.tools import progress


def test_a_million_steps_draw_101_frames_and_end_the_line():
    out = Terminal()
    with progress.bar("work", 1_000_000, "steps", stream=out) as step:
        for _ in range(1_000_000):
            step(1)
    text = out.getvalue()
    assert text.count("\r") == 101 and text.endswith("\rwork [####################] 100% 1000000/1000000 steps\n")


def test_the_bounds_of_the_percent():
    out = Terminal()
    with progress.bar("b", 200, stream=out) as step:
        step(1)  # 0.5%: still the 0% frame
        assert out.getvalue().count("\r") == 1
        step(1)  # 1%
        assert out.getvalue().count("\r") == 2
        step(197)  # 99.5%: the 99% frame
        assert "  99% 199/200" in out.getvalue() and "100%" not in out.getvalue()
        step(1)
    assert out.getvalue().endswith(" 100% 200/200 \n") and out.getvalue().count("\n") == 1


def test_nothing_on_a_pipe_nothing_for_no_work_and_a_bar_cut_short_ends_its_line():
    pipe = io.StringIO()
    with progress.bar("p", 10, stream=pipe) as step:
        step(10)
    assert pipe.getvalue() == ""
    out = Terminal()
    with progress.bar("empty", 0, stream=out):
        pass
    assert out.getvalue() == ""
    out = Terminal()
    try:
        with progress.bar("cut", 10, stream=out) as step:
            step(3)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert out.getvalue().endswith(" 30% 3/10 \n")
    closed = io.StringIO()
    closed.close()
    assert not progress.is_terminal(closed)


def test_stages_end_one_bar_before_the_next():
    out = Terminal()
    with progress.stages(out) as start:
        a = start("one", 2, "x")
        a(1)
        b = start("two", 1, "y")  # "one" cut at 50%: its line ended
        b(1)
    lines = out.getvalue().split("\n")
    assert [line.rsplit("\r", 1)[-1] for line in lines] == ["one [##########..........]  50% 1/2 x",
                                                           "two [####################] 100% 1/1 y", ""]
