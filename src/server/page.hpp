// The page at `/`: next-word suggestions as you type, and a generation with each token coloured by its
// probability (as GLTR colours by rank). One self-contained HTML file: no framework, nothing fetched but
// this server's own endpoints.
#pragma once
#include <string>

namespace lstmlm::server {

const std::string& page_html();

}  // namespace lstmlm::server
