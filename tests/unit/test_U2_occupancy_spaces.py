"""An Occupancy-format file whose fields are separated by spaces (helper U2, a user's day:
``df.to_string()`` or a fixed-width logger export) was refused as "no column 'Temperature',
... in the header (it has 'Temperature Humidity Light CO2 HumidityRatio Occupancy')",
naming no cause; the refusal now says what to change."""

import pytest
from ldpfleet.collector.gcdp.evaluation import load_occupancy

HEADER = "Temperature Humidity Light CO2 HumidityRatio Occupancy"
ROW = "23.18 27.272 426 721.25 0.00479 1"


def test_a_space_separated_file_is_told_to_use_a_delimiter(tmp_path):
    path = tmp_path / "spaces.txt"
    path.write_text(HEADER + "\n" + (ROW + "\n") * 40)
    with pytest.raises(ValueError, match="fields separated by spaces\\? separate them by commas"):
        load_occupancy(path)


def test_a_header_that_lacks_a_column_is_not_called_space_separated(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text("Temperature,Humidity,Light,CO2,Occupancy\n" + "1,2,3,4,1\n" * 40)
    with pytest.raises(ValueError, match="no column 'HumidityRatio'") as error:
        load_occupancy(path)
    assert "spaces" not in str(error.value)
