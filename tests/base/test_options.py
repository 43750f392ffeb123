"""Named choices are declared once (laddu_dask.options) and used the same everywhere."""

from __future__ import annotations

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.jobs.config import load_config
from laddu_dask.jobs.schema import ConfigError
from laddu_dask.options import Option


def test_members_and_strings_are_the_same_choice(tmp_path):
    x = ld.scalar("x")
    model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
    data = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.1, 1.0, 50)},
                                  memory_policy=ld.MemoryPolicy.RESIDENT)
    assert data.memory_policy == "resident"
    mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.0, 1.0, 200)})
    by_name = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)],
                            execution=ld.Execution(kernel="numpy"))
    by_member = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)],
                              execution=ld.Execution(kernel=ld.Kernel.NUMPY))
    assert by_member.value_and_gradient([1.3]) == by_name.value_and_gradient([1.3])
    assert by_member.fit(method=ld.FitMethod.LBFGSB).method == "lbfgsb"
    data.write_parquet(tmp_path / "d.parquet", precision=ld.Precision.F32)
    assert ld.read_parquet(tmp_path / "d.parquet").n_events == 50


@pytest.mark.parametrize("option", Option.__subclasses__(), ids=lambda o: o.__name__)
def test_a_wrong_choice_names_what_and_lists_every_allowed_value(option):
    with pytest.raises(ValueError) as info:
        option.check("no-such-choice", "the choice")
    allowed = ", ".join(repr(v) for v in option.values())
    assert str(info.value) == f"the choice must be one of {allowed}, got 'no-such-choice'"
    assert option.check(option.values()[-1], "x") == option.values()[-1]
    assert type(option.check(list(option)[0], "x")) is str


@pytest.mark.parametrize(("key", "option"), [("device", ld.Device), ("precision", ld.Precision),
                                             ("kernel", ld.Kernel), ("normalization", ld.Normalization)])
def test_the_batch_job_schema_lists_the_options_choices(tmp_path, key, option):
    config = tmp_path / "fit.toml"
    config.write_text("model = 'ksks'\n[data]\npath = 'd.parquet'\n[accmc]\npath = 'm.parquet'\n"
                      f"[execution]\n{key} = 'nope'\n")
    with pytest.raises(ConfigError) as info:
        load_config(config)
    for value in option.values():
        assert repr(value) in str(info.value)
