// For the test option_names_check_finds_key_literals: lines 4 and 5 must be
// found, nothing else ("max_epochs" in a comment is not code).
inline constexpr const char* kMaxEpochs = "max_epochs";  // a declaration
long epochs(const nlohmann::json& cfg) { return cfg.value("max_epochs", 1L); }
bool seeded(const nlohmann::json& cfg) { return cfg.contains("seed"); }
const char* metric = "seed";  // a one-word key outside a config read is another word
const char* text = R"(cfg["max_epochs"])";
