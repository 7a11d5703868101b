; Inno Setup script for Treechat: a per-user install (no administrator rights), a Start-menu
; shortcut, and an uninstaller that keeps the user's conversations unless asked to remove them.
;
; Build (from the repository root, after PyInstaller has written build\dist\treechat):
;   iscc /DAppVersion=0.1.0 installers\windows\treechat.iss
; Output: build\installers\treechat-<version>-windows-x64-setup.exe
;
; Uninstall keeps %LOCALAPPDATA%\Treechat (the conversation store and window settings) unless
; the user answers Yes when asked, or runs the uninstaller with /DeleteUserData=1. API keys live
; in Windows Credential Manager and are not touched either way.

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\build\dist\treechat"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\build\installers"
#endif
#define AppName "Treechat"
#define AppExe "treechat.exe"

[Setup]
AppId={{6C1B9F3E-2D4A-4E7B-9A51-7F0C3E8D2B64}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher={#AppName}
VersionInfoVersion={#AppVersion}
; Per user: installs under %LOCALAPPDATA%\Programs and never asks for elevation.
PrivilegesRequired=lowest
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
DisableDirPage=auto
OutputDir={#OutputDir}
OutputBaseFilename=treechat-{#AppVersion}-windows-x64-setup
SetupIconFile=..\..\build\icons\treechat.ico
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName}
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"; Comment: "Chat with language models, offline first"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Files the app may leave beside itself; never the user data folder (see [Code]).
Type: filesandordirs; Name: "{app}"

[Code]
var
  DeleteUserData: Boolean;

function UserDataDir(): String;
begin
  { platformdirs' user_data_dir("Treechat", appauthor=False) on Windows }
  Result := ExpandConstant('{localappdata}\Treechat');
end;

function InitializeUninstall(): Boolean;
begin
  Result := True;
  DeleteUserData := ExpandConstant('{param:DeleteUserData|0}') = '1';
  if (not DeleteUserData) and (not UninstallSilent()) and DirExists(UserDataDir()) then
    DeleteUserData := MsgBox(
      'Also delete your Treechat conversations and settings?' + #13#10 + #13#10 +
      UserDataDir() + #13#10 + #13#10 +
      'Choose No to keep them for a later install.',
      mbConfirmation, MB_YESNO or MB_DEFBUTTON2) = IDYES;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if (CurUninstallStep = usPostUninstall) and DeleteUserData then
    DelTree(UserDataDir(), True, True, True);
end;
