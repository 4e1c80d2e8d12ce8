// gpunex: the command-line client of a gpunex platform (docs/cli.md). Depends on
// src/common only: it speaks to the platform over its public REST API and WebSockets,
// with an API key, exactly as any other client does.
//
//   gpunex offers search --gpu rtx-4090 --max-price 0.5
//   gpunex rentals create ofr_... --image ubuntu:24.04 --wait -- sleep infinity
//   gpunex rentals ssh rnt_...
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/terminal.h"
#include "common/log.h"

namespace gpunex::cli {
namespace {

// One case per command path: its subcommands and options.
void Walk(const CLI::App* app, const std::string& path, std::string* cases) {
  std::string words;
  for (const CLI::App* sub : app->get_subcommands({})) {
    words += (words.empty() ? "" : " ") + sub->get_name();
  }
  for (const CLI::Option* opt : app->get_options({})) {
    for (const std::string& name : opt->get_lnames()) words += " --" + name;
    for (const std::string& name : opt->get_snames()) words += " -" + name;
  }
  *cases += "    \"" + path + "\") opts=\"" + words + "\" ;;\n";
  for (const CLI::App* sub : app->get_subcommands({})) {
    Walk(sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), cases);
  }
}

std::string BashCompletion(const CLI::App& app) {
  std::string cases;
  Walk(&app, "", &cases);
  return "# gpunex completion for bash: source <(gpunex completion bash)\n"
         "_gpunex() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" w i opts=\"\"\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    w=\"${COMP_WORDS[i]}\"\n"
         "    [[ $w == -* ]] && continue\n"
         "    path=\"${path:+$path }$w\"\n"
         "  done\n"
         "  case \"$path\" in\n" +
         cases +
         "  esac\n"
         "  COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
         "}\n"
         "complete -F _gpunex gpunex\n";
}

}  // namespace

void AddCompletionCommand(CLI::App& app, Context& /*ctx*/) {
  CLI::App* completion = app.add_subcommand("completion", "a shell completion script");
  auto shell = std::make_shared<std::string>();
  completion->add_option("shell", *shell, "bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  completion->callback([shell, &app] {
    if (*shell == "zsh") {
      std::cout << "#compdef gpunex\n"
                   "# gpunex completion for zsh: source <(gpunex completion zsh)\n"
                   "autoload -U +X bashcompinit && bashcompinit\n";
    }
    std::cout << BashCompletion(app);
  });
}

}  // namespace gpunex::cli

int main(int argc, char** argv) {
  using namespace gpunex::cli;
  InstallInterruptHandler();
  gpunex::SetLogLevel(gpunex::LogLevel::kWarn);
  Context ctx;
  CLI::App app{"gpunex: rent GPUs, reach your rentals, run your machines and the platform"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gpunex ") + GPUNEX_CLI_VERSION);
  app.add_option("--url", ctx.flags.url, "the platform (env GPUNEX_URL)");
  app.add_option("--api-key", ctx.flags.api_key, "the API key (env GPUNEX_API_KEY)");
  app.add_option("--profile", ctx.flags.profile,
                 "a profile of the config file (env GPUNEX_PROFILE)");
  app.add_option("-o,--output", ctx.output, "json, yaml, table, wide or csv");
  app.add_flag("-q,--quiet", ctx.quiet, "ids only");
  app.add_flag("--debug", ctx.debug, "print each request (the key redacted) on stderr");
  app.fallthrough();

  AddAuthCommands(app, ctx);
  AddCustomerCommands(app, ctx);
  AddAccessCommands(app, ctx);
  AddProviderCommands(app, ctx);
  AddAdminCommands(app, ctx);
  AddCompletionCommand(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  } catch (const CliError& e) {
    std::cout.flush();
    std::cerr << "gpunex: " << e.what() << "\n";
    return e.code();
  }
  return kExitOk;
}
