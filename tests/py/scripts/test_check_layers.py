"""scripts/check-layers on small fake trees: a clean tree passes, each kind of violation is reported as one
line FILE:LINE: ... and exit status 1."""
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("LSTMLM_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "check-layers")

# A minimal tree where every include points down.
GOOD = {
    "include/lstmlm/error.hpp": "#pragma once\n",
    "include/lstmlm/config.hpp": '#pragma once\n#include "lstmlm/error.hpp"\n',
    "include/lstmlm/model.hpp": '#pragma once\n#include "lstmlm/config.hpp"\n',
    "include/lstmlm/engine.hpp": '#pragma once\n#include <vector>\n#include "lstmlm/model.hpp"\n',
    "src/format/config.cpp": '#include "lstmlm/config.hpp"\n#include "format/json_util.hpp"\n',
    "src/format/json_util.hpp": "#pragma once\n",
    "src/model/model.cpp": '#include "lstmlm/model.hpp"\n#include "lstmlm/error.hpp"\n',
    "src/kernels/step.hpp": '#pragma once\n#include "lstmlm/config.hpp"\n',
    "src/engine/engine.cpp": '#include "lstmlm/engine.hpp"\n#include "kernels/step.hpp"\n',
    "cli/main.cpp": '#include "commands.hpp"\n#include "lstmlm/engine.hpp"\n',
    "cli/commands.hpp": "#pragma once\n",
}


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
        return p.returncode, p.stdout.splitlines()


class CheckLayers(unittest.TestCase):
    def test_clean_tree_passes(self):
        code, out = run(GOOD)
        self.assertEqual(code, 0, out)

    def test_upward_include_is_reported(self):
        code, out = run({**GOOD, "src/format/config.cpp": '#include "lstmlm/config.hpp"\n#include "lstmlm/model.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertEqual(out, ["src/format/config.cpp:2: includes lstmlm/model.hpp (layer model) from layer format: "
                               "includes must point down"])

    def test_private_upward_include_is_reported(self):
        code, out = run({**GOOD, "src/model/model.cpp": '#include "lstmlm/model.hpp"\n#include "kernels/step.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertEqual(out, ["src/model/model.cpp:2: includes kernels/step.hpp (layer kernels) from layer model: "
                               "includes must point down"])

    def test_a_namespace_that_does_not_follow_its_folder_is_reported(self):
        ok = {**GOOD, "src/engine/team.hpp": "#pragma once\nnamespace lstmlm::engine {\n}\n",
              "src/engine/engine.cpp": '#include "lstmlm/engine.hpp"\nnamespace lstmlm {\n}\n'}
        self.assertEqual(run(ok)[0], 0)
        code, out = run({**ok, "src/engine/team.hpp": "#pragma once\n\nnamespace lstmlm::detail {\n}\n",
                         "cli/commands.hpp": "#pragma once\nnamespace lstmlm {\n}\n"})
        self.assertEqual(code, 1)
        self.assertEqual(out, ["src/engine/team.hpp:3: opens namespace lstmlm::detail; files here use lstmlm or "
                               "lstmlm::engine (namespaces follow folders)",
                               "cli/commands.hpp:2: opens namespace lstmlm; files here use lstmlm::cli "
                               "(namespaces follow folders)"])

    def test_python_bindings_are_scanned_as_a_peer_of_the_server(self):
        bad = {**GOOD, "src/server/service.hpp": "#pragma once\n",
               "python/py_model.cpp": '#include "lstmlm/engine.hpp"\n#include "server/service.hpp"\n'}
        code, out = run(bad)
        self.assertEqual(code, 1)
        self.assertEqual(len(out), 1, out)
        self.assertTrue(out[0].startswith("python/py_model.cpp:2: includes server/service.hpp"), out)

    def test_kernels_must_not_include_model(self):
        code, out = run({**GOOD, "src/kernels/step.hpp": '#pragma once\n#include "lstmlm/model.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertEqual(out, ["src/kernels/step.hpp:2: includes lstmlm/model.hpp (layer model) from layer kernels: "
                               "kernels must not include model-layer headers"])

    def test_public_header_upward_and_private(self):
        code, out = run({**GOOD, "include/lstmlm/model.hpp": '#include "lstmlm/engine.hpp"\n#include "format/json_util.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertEqual(len(out), 2, out)
        self.assertIn("include/lstmlm/model.hpp:1: includes lstmlm/engine.hpp (layer engine) from layer model", out[0])
        self.assertIn("include/lstmlm/model.hpp:2: includes format/json_util.hpp", out[1])
        self.assertIn("public headers must not include src/ headers", out[1])

    def test_unknown_public_header_is_an_error(self):
        code, out = run({**GOOD, "include/lstmlm/new.hpp": "#pragma once\n",
                         "cli/main.cpp": '#include "lstmlm/new.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertEqual(len(out), 2, out)
        self.assertTrue(out[0].startswith("cli/main.cpp:1: includes lstmlm/new.hpp"), out)
        self.assertTrue(out[1].startswith("include/lstmlm/new.hpp:1: public header not in PUBLIC_HEADERS"), out)


if __name__ == "__main__":
    unittest.main()
