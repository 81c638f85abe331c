// What lstmlm.dask shares with `lstmlm score --shard/--resume`: the shards of an input by bytes
// (tasks::shard_ranges) and the resume directory (tasks::ResumeDir), so that both cut a corpus and keep
// finished blocks the same way. Private to the package (lstmlm._lstmlm._shard_ranges, ...).
#include <pybind11/stl.h>

#include "lstmlm/tasks/resume.hpp"
#include "lstmlm/tasks/shard.hpp"
#include "py_args.hpp"
#include "py_records.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

// A dict (of str, int, float, bool, None, lists and dicts) as JSON, through Python's json module.
nlohmann::json to_json(const py::object& o) {
  const std::string text = py::module_::import("json").attr("dumps")(o).cast<std::string>();
  return nlohmann::json::parse(text);
}

py::object from_json(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

}  // namespace

void bind_resume(py::module_& m) {
  m.def(
      "_shard_ranges",
      [](TextList<"paths"> paths, Text<"shard"> shard) {
        py::list out;
        for (const auto& r : tasks::shard_ranges(paths.value, tasks::parse_shard(shard.value)))
          out.append(py::make_tuple(r.path, r.file, r.begin, r.end));
        return out;
      },
      py::arg("paths"), py::arg("shard"),
      "[(path, file index, begin, end)]: the byte ranges of shard 'K/N' of the files "
      "(lstmlm/tasks/shard.hpp).");
  m.def(
      "_lines_before",
      [](Text<"path"> path, uint64_t offset) { return tasks::lines_before(path.value, offset); },
      py::arg("path"), py::arg("offset"));
  py::class_<tasks::ResumeDir>(m, "_ResumeDir")
      .def(py::init([](Text<"dir"> dir, const py::dict& manifest) {
             return tasks::ResumeDir(dir.value, to_json(manifest));
           }),
           py::arg("dir"), py::arg("manifest"))
      .def(
          "finished",
          [](const tasks::ResumeDir& d, Text<"id"> id) -> py::object {
            auto b = d.finished(id.value);
            if (!b) return py::none();
            return py::make_tuple(py::bytes(b->output), from_json(b->record));
          },
          py::arg("id"), "None, or (output bytes, record dict) of a block an earlier run finished.")
      .def(
          "commit",
          [](const tasks::ResumeDir& d, Text<"id"> id, const py::bytes& output, const py::dict& record) {
            const std::string data = output;
            const nlohmann::json r = to_json(record);
            py::gil_scoped_release nogil;
            d.commit(id.value, data, r);
          },
          py::arg("id"), py::arg("output"), py::arg("record"))
      .def_property_readonly("dir", &tasks::ResumeDir::dir);
}

}  // namespace lstmlm::py
