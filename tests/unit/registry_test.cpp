// The implementation catalog without LibTorch: names checked in configs (unknown name, "did you
// mean", a device an entry refuses), `[plugins] load` (paths, loading through the loader, names
// visible per config, two plugins offering one name), how a comparison judges a change of
// implementation from the entries' declared knob classes, and the precision traits table.
//
// The core tests have no kernels: the built-ins' names are declared here as
// harness/kernels/builtins.cpp registers them, and a fake loader stands in for dlopen ("plugin
// files" are names; nothing is read). Installed once for the whole core_tests process, so every
// config test sees the same catalog the lockstep binary has.
#include <gtest/gtest.h>

#include "harness/compare/comparison_stats.h"
#include "harness/config/config.h"
#include "harness/registry/catalog.h"
#include "variants/precision_traits.h"

using namespace lockstep;
using config::Knob;
using registry::Catalog;
using registry::ImplInfo;
using registry::Slot;

namespace {

const bool kInstalled = [] {
  auto& c = Catalog::global();
  for (const auto& [slot, name] : std::vector<std::pair<Slot, std::string>>{
           {Slot::Attention, "math"},
           {Slot::Attention, "fused"},
           {Slot::Activation, "gelu"},
           {Slot::LayerNorm, "layer_norm"},
           {Slot::Optimizer, "adamw"},
           {Slot::Loss, "cross_entropy"}})
    c.add(ImplInfo{slot, name, Knob::Exact, "built-in", "", {}});
  c.set_loader([](const std::string& file) -> registry::PluginFile {
    auto& cat = Catalog::global();
    const std::string base = file.substr(file.rfind('/') + 1);
    if (base == "fake_a.so") {
      cat.add({Slot::Activation, "fast_gelu", Knob::Approximate, "approximate", file, {}});
      cat.add({Slot::Optimizer, "exact_adam", Knob::Exact, "exact", file, {}});
      cat.add({Slot::Optimizer, "gpu_adam", Knob::Exact, "cuda only", file, {"cuda"}});
    } else if (base == "fake_b.so") {
      cat.add({Slot::Activation, "fast_gelu", Knob::Exact, "another build", file, {}});
    } else {
      throw std::runtime_error("no entry point");
    }
    return {file, "hash-of-" + base};
  });
  c.mark_installed();
  return true;
}();

config::Config parse(const std::string& text) {
  return config::Config::parse(text, "/x/t.toml");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for:\n" << text;
  return "";
}

Knob knob_of(const config::Config& a, const config::Config& b, const std::string& key) {
  for (const auto& c : config::diff(a, b))
    if (c.key == key) return c.knob;
  ADD_FAILURE() << key << " did not change";
  return Knob::Workload;
}

}  // namespace

TEST(Registry, AnUnknownNameListsTheRegisteredOnesAndSuggests) {
  ASSERT_TRUE(kInstalled);
  EXPECT_EQ(error_of("[model]\nactivation = \"gleu\"\n"),
            "/x/t.toml:2:1: model.activation: \"gleu\" is not a registered activation "
            "(registered: gelu) (did you mean \"gelu\"?)");
  EXPECT_EQ(error_of("[attention]\nimpl = \"flash-attention-3\"\n"),
            "/x/t.toml:2:1: attention.impl: \"flash-attention-3\" is not a registered attention "
            "(registered: math, fused)");
  // A --set override is located at the override.
  try {
    config::Config::parse("", "/x/t.toml", {"optim.impl=adamm"});
    ADD_FAILURE();
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "<--set optim.impl=adamm>:1:1: optim.impl: \"adamm\" is not a registered optimizer "
              "(registered: adamw) (did you mean \"adamw\"?)");
  }
}

TEST(Registry, PluginNamesExistForTheConfigsThatLoadThem) {
  auto c = parse("[plugins]\nload = [\"fake_a.so\"]\n[model]\nactivation = \"fast_gelu\"\n");
  EXPECT_EQ(c.strings("plugins.load"), config::StrList{"/x/fake_a.so"});  // relative to the file
  auto sel = registry::selected(c, Slot::Activation);
  ASSERT_TRUE(sel.has_value());
  EXPECT_EQ(sel->origin, "/x/fake_a.so");
  ASSERT_EQ(registry::plugin_files(c).size(), 1u);
  EXPECT_EQ(registry::plugin_files(c)[0].sha256, "hash-of-fake_a.so");
  // Without loading it, the name is unknown (and the suggestion lists only what is visible).
  EXPECT_EQ(error_of("[model]\nactivation = \"fast_gelu\"\n"),
            "/x/t.toml:2:1: model.activation: \"fast_gelu\" is not a registered activation "
            "(registered: gelu)");
  // Two plugin files offering one name: fine in two configs, an error in one.
  EXPECT_NO_THROW(parse("[plugins]\nload = [\"fake_b.so\"]\n[model]\nactivation = \"fast_gelu\"\n"));
  EXPECT_EQ(error_of("[plugins]\nload = [\"fake_a.so\", \"fake_b.so\"]\n"),
            "/x/t.toml:2:1: plugins.load: /x/fake_a.so and /x/fake_b.so both register activation "
            "\"fast_gelu\"");
  EXPECT_EQ(error_of("[plugins]\nload = [\"broken.so\"]\n"),
            "/x/t.toml:2:1: plugins.load: /x/broken.so: no entry point");
  EXPECT_EQ(error_of("[plugins]\nload = [\"fake_a.so\", \"fake_a.so\"]\n"),
            "/x/t.toml:2:1: plugins.load: /x/fake_a.so: listed twice");
}

// The builds are part of the effective config: derived from the files, or pinned.
TEST(Registry, PluginHashesAreDerivedOrPinned) {
  auto c = parse("[plugins]\nload = [\"fake_a.so\"]\n");
  EXPECT_EQ(c.strings("plugins.sha256"), config::StrList{"hash-of-fake_a.so"});
  EXPECT_NE(c.hash(), parse("[plugins]\nload = [\"fake_b.so\"]\n").hash());
  EXPECT_NO_THROW(parse("[plugins]\nload = [\"fake_a.so\"]\nsha256 = [\"hash-of-fake_a.so\"]\n"));
  EXPECT_EQ(error_of("[plugins]\nload = [\"fake_a.so\"]\nsha256 = [\"0123\"]\n"),
            "/x/t.toml:3:1: plugins.sha256: /x/fake_a.so has sha256 hash-of-fake_a.so, the config "
            "pins 0123 (the plugin was rebuilt)");
  EXPECT_EQ(error_of("[plugins]\nload = [\"fake_a.so\"]\nsha256 = []\n"),
            "/x/t.toml:3:1: plugins.sha256: pins 0 hashes for 1 plugin files");
  EXPECT_EQ(parse("").strings("plugins.sha256"), config::StrList{});
}

TEST(Registry, AnEntryRefusesADeviceItDoesNotRunOn) {
  EXPECT_EQ(error_of("[plugins]\nload = [\"fake_a.so\"]\n[optim]\nimpl = \"gpu_adam\"\n"),
            "/x/t.toml:4:1: optim.impl: \"gpu_adam\" (from /x/fake_a.so) runs on cuda only, not "
            "on run.device = \"cpu\"");
  EXPECT_NO_THROW(parse("[run]\ndevice = \"cuda\"\n[plugins]\nload = [\"fake_a.so\"]\n[optim]\n"
                        "impl = \"gpu_adam\"\n"));
}

TEST(Registry, TheLoadListIsAnArrayOfStrings) {
  EXPECT_EQ(error_of("[plugins]\nload = \"fake_a.so\"\n"),
            "/x/t.toml:2:1: plugins.load: expected an array of strings, got string");
  EXPECT_EQ(error_of("[plugins]\nload = [\"fake_a.so\", 3]\n"),
            "/x/t.toml:2:1: plugins.load: element 2: expected a string, got integer");
  // The effective config round-trips, list included.
  auto c = parse("[plugins]\nload = [\"fake_a.so\"]\n");
  const std::string toml = c.to_toml();
  EXPECT_NE(toml.find("[plugins]\nload = [\"/x/fake_a.so\"]\n"), std::string::npos) << toml;
  auto again = config::Config::parse(toml, "/y/again.toml");
  EXPECT_EQ(again.strings("plugins.load"), c.strings("plugins.load"));
  EXPECT_EQ(again.hash(), c.hash());
  // --set takes a TOML array.
  auto s = config::Config::parse("", "/x/t.toml", {"plugins.load=[\"/x/fake_b.so\"]"});
  EXPECT_EQ(s.strings("plugins.load"), config::StrList{"/x/fake_b.so"});
}

// The comparison judges an implementation change by the knob classes the entries declare:
// approximate when either side is, exact otherwise. Loading a plugin is bookkeeping; the same
// name from another plugin file is judged by the entries it selects.
TEST(Registry, AChangeOfImplementationIsJudgedByTheDeclaredKnobClasses) {
  const auto base = parse("");
  const auto approx =
      parse("[plugins]\nload = [\"fake_a.so\"]\n[model]\nactivation = \"fast_gelu\"\n");
  const auto exact = parse("[plugins]\nload = [\"fake_a.so\"]\n[optim]\nimpl = \"exact_adam\"\n");
  const auto other_build =
      parse("[plugins]\nload = [\"fake_b.so\"]\n[model]\nactivation = \"fast_gelu\"\n");
  EXPECT_EQ(knob_of(base, approx, "model.activation"), Knob::Approximate);
  EXPECT_EQ(knob_of(approx, base, "model.activation"), Knob::Approximate);
  EXPECT_EQ(knob_of(base, exact, "optim.impl"), Knob::Exact);
  EXPECT_EQ(knob_of(base, exact, "plugins.load"), Knob::None);
  EXPECT_EQ(knob_of(base, parse("[attention]\nimpl = \"fused\"\n"), "attention.impl"), Knob::Exact);
  // Same name, other build: the change is the plugin file, judged by both entries' classes.
  EXPECT_EQ(knob_of(approx, other_build, "plugins.load"), Knob::Approximate);
  auto k = compare::classify_changes(config::diff(base, approx));
  EXPECT_STREQ(config::knob_class_name(k.klass), "approximate");
  EXPECT_EQ(k.knobs, std::vector<std::string>{"model.activation"});
}

TEST(PrecisionTraits, OneTableForEveryUse) {
  using variants::Compute;
  for (Compute c : variants::all_computes())
    EXPECT_EQ(variants::parse_compute(variants::name_of(c)), c);
  EXPECT_FALSE(variants::parse_compute("bf8").has_value());
  // MFU's peak: tf32 on a CPU computes fp32; fp16 has no CPU GEMM peak; on a GPU fp16 runs at
  // the bf16 rate.
  EXPECT_EQ(variants::traits(Compute::TF32).cpu_peak, Compute::FP32);
  EXPECT_FALSE(variants::traits(Compute::FP16).cpu_peak.has_value());
  EXPECT_EQ(variants::traits(Compute::FP16).gpu_peak, Compute::BF16);
  EXPECT_EQ(variants::names_of(variants::calibrated_computes()),
            (std::vector<std::string>{"fp32", "bf16"}));
  EXPECT_TRUE(variants::traits(Compute::FP16).loss_scaling);
  EXPECT_FALSE(variants::traits(Compute::BF16).loss_scaling);
  EXPECT_EQ(variants::traits(Compute::BF16).autocast, variants::Dtype::BF16);
  EXPECT_FALSE(variants::traits(Compute::TF32).autocast.has_value());
  EXPECT_EQ(variants::precision_change_knob(Compute::FP32, Compute::TF32, "cpu"), Knob::Exact);
  EXPECT_EQ(variants::precision_change_knob(Compute::FP32, Compute::TF32, "cuda"),
            Knob::Approximate);
}
